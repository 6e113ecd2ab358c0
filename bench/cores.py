#!/usr/bin/env python3
"""How fast is each core right now?  One 1-thread ge session per CPU this process may use, all
running at the same time (as the threads of one multi-threaded run do), on a chain of float32
and then bf16 matmuls [128 x 768] x [768 x 768] (4 distinct weights, 9.4 MB in float32, run
back to back for --seconds); prints each CPU's GFLOP/s and, per precision, the slowest CPU over
the fastest.

    .venv/bin/python bench/cores.py [--seconds 1.0]

Why: on a shared machine one core can run much slower than the other for seconds at a time
(another tenant on its physical core; bf16 on AMX the most: 2.5-3x slower, float32 1.1-1.3x).
oneDNN's primitives and most of ge's kernels split work evenly over the threads (pgemm and the
bf16 AMX kernels take work back from a slower thread), so a multi-threaded run goes at about the
pace of its slowest core where it runs those.  `make bench` prints this before and after its tables, so that a row measured while one
core was slow can be told from a slow kernel.  On a processor without bf16 instructions the
bf16 column runs in float32 (ge's fallback).
"""
import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

M, K, LAYERS = 128, 768, 4
PRECISIONS = (("fp32", "force_fp32"), ("bf16", "allow_fp32_to_bf16"))


def core_worker(cpu, path, seconds, barrier, out):
    """Pinned to `cpu`: per precision, wait for every worker, then run for `seconds`."""
    try:
        os.sched_setaffinity(0, {cpu})
        import numpy as np
        import ge
        x = np.random.default_rng(cpu).standard_normal((1, M, K)).astype(np.float32)
        res = {}
        for name, mode in PRECISIONS:
            s = ge.InferenceSession(path, threads=1, precision=mode)
            for _ in range(5):
                s.run(None, {"x": x})
            barrier.wait(timeout=600)
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                s.run(None, {"x": x})
                n += 1
            dt = time.perf_counter() - t0
            res[name] = n * LAYERS * 2.0 * M * K * K / dt / 1e9
            del s
        out.put((cpu, res, None))
    except Exception as e:  # reported by the parent, never a hang: the barrier is aborted
        barrier.abort()
        out.put((cpu, None, "%s: %s" % (type(e).__name__, e)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.0, help="timed seconds per precision on every CPU at once")
    a = ap.parse_args()
    if a.seconds <= 0:
        sys.exit("cores: --seconds must be positive")
    cpus = sorted(os.sched_getaffinity(0))
    from matmul_chain import chain_model
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.onnx")
        chain_model(path, M, K, LAYERS)
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(len(cpus)), ctx.Queue()
        procs = [ctx.Process(target=core_worker, args=(c, path, a.seconds, barrier, out)) for c in cpus]
        for p in procs:
            p.start()
        got = {}
        for _ in procs:
            cpu, res, err = out.get(timeout=900)
            got[cpu] = (res, err)
        for p in procs:
            p.join()
    errs = ["cpu%d: %s" % (c, e) for c, (r, e) in sorted(got.items()) if e]
    if errs:
        print("cores: " + "; ".join(errs))
        return 1
    line = ["cores (1 thread each, all at once, matmul GFLOP/s):"]
    for c in cpus:
        r = got[c][0]
        line.append("cpu%d fp32 %.0f bf16 %.0f;" % (c, r["fp32"], r["bf16"]))
    if len(cpus) > 1:
        for name, _ in PRECISIONS:
            v = [got[c][0][name] for c in cpus]
            line.append("%s slowest/fastest %.2f" % (name, min(v) / max(v)))
    print(" ".join(line).rstrip(";"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
