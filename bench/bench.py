#!/usr/bin/env python3
"""ge vs onnxruntime on the reference models, measured in the same run.

    .venv/bin/python bench/bench.py --models tests/models/out [--threads 1,2] [--iters 20]
                                    [--warmup 3] [--rounds 1] [--only resnet50,bert_base | --all]
                                    [--json F]

Each (model, engine, threads) is measured in its own subprocess: it loads the model, runs
--warmup untimed iterations, then --iters timed ones on the model's saved inputs, and reports
the median and p90 latency; the parent reads that process's peak RSS (os.wait4).  ge runs
through the Python package (ge.InferenceSession(path, threads=N)); onnxruntime with
intra_op_num_threads=N, inter_op_num_threads=1, sequential execution, CPUExecutionProvider.
With --rounds R the ge and onnxruntime processes alternate R times (ge, ort, ort, ge, ...) and
the median and p90 are taken over all their timed iterations, so that a noisy neighbour on a
shared machine weighs on both engines alike; peak RSS is the largest of the rounds.
Ratios are ge/ort: lower is better.  See bench/README.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ["resnet50", "mobilenetv2", "googlenet", "bert_base", "gpt2"]
ALL_MODELS = ["resnet50", "mobilenetv2", "googlenet", "bert_base", "gpt2"]


# ----------------------------------------------------------------------------- worker

def percentile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def worker(a):
    import numpy as np
    in_dir = a.model[:-len(".onnx")] + ".inputs"
    if a.worker == "ort":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        t0 = time.perf_counter()
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    else:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import ge
        t0 = time.perf_counter()
        sess = ge.InferenceSession(a.model, threads=a.threads)
    names = [i.name for i in sess.get_inputs()]
    feeds = {n: np.load(os.path.join(in_dir, n + ".npy")) for n in names}
    sess.run(None, feeds)
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(max(a.warmup - 1, 0)):
        sess.run(None, feeds)
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"median_ms": statistics.median(times), "p90_ms": percentile(times, 0.9),
                      "first_ms": first_ms, "iters": a.iters, "times_ms": times}))
    return 0


# ----------------------------------------------------------------------------- parent

def measure(engine, model, threads, iters, warmup, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--model", model,
           "--threads", str(threads), "--iters", str(iters), "--warmup", str(warmup)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        t0 = time.time()
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - t0 > timeout:
                p.kill()
                _, status, usage = os.wait4(p.pid, 0)
                return {"error": "timed out after %ds" % timeout}
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, etext = out.read(), err.read()
    if p.returncode != 0:
        lines = [ln for ln in (etext + text).strip().splitlines() if ln.strip()]
        return {"error": "exit %d: %s" % (p.returncode, lines[-1] if lines else "no output")}
    try:
        r = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "unreadable worker output: %r" % text[-200:]}
    r["rss_mib"] = usage.ru_maxrss / 1024.0
    return r


def pool(results):
    """One result from several rounds: statistics over all their iterations, the largest RSS."""
    bad = [r for r in results if "error" in r]
    if bad:
        return bad[0]
    if len(results) == 1:
        return results[0]
    times = [t for r in results for t in r["times_ms"]]
    return {"median_ms": statistics.median(times), "p90_ms": percentile(times, 0.9),
            "first_ms": results[0]["first_ms"], "iters": len(times), "times_ms": times,
            "rss_mib": max(r["rss_mib"] for r in results)}


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def ratio(a, b):
    return None if a is None or b is None or not b else a / b


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.environ.get("GE_MODELS",
                                                       os.path.join(ROOT, "tests", "models", "out")),
                    help="folder made by `make models`")
    ap.add_argument("--only", default=",".join(DEFAULT_MODELS),
                    help="comma-separated models (default: %s)" % ",".join(DEFAULT_MODELS))
    ap.add_argument("--all", action="store_true", help="all five models (the default)")
    ap.add_argument("--threads", default="2", help="comma-separated thread counts, e.g. 1,2")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate the two engines this many times and pool their iterations")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per measurement")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--worker", choices=["ge", "ort"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        a.threads = int(a.threads)
        return worker(a)

    names = ALL_MODELS if a.all else [m for m in a.only.split(",") if m]
    threads = [int(t) for t in a.threads.split(",") if t]
    if not os.path.isdir(a.models):
        print("bench: model folder %s is missing: run `make models`" % a.models, file=sys.stderr)
        return 1
    print("bench: %s; threads %s; %d iterations after %d warm-up%s" % (
        ", ".join(names), ",".join(map(str, threads)), a.iters, a.warmup,
        "; %d alternating rounds" % a.rounds if a.rounds > 1 else ""), flush=True)

    rows, failed = [], False
    for name in names:
        path = os.path.join(a.models, name + ".onnx")
        if not os.path.isfile(path):
            print("bench: %s is missing: run `make models`" % path, file=sys.stderr)
            failed = True
            continue
        for t in threads:
            runs = {"ge": [], "ort": []}
            for k in range(max(a.rounds, 1)):
                for engine in (("ge", "ort") if k % 2 == 0 else ("ort", "ge")):
                    print("bench: %-12s %-3s %d thread(s) ..." % (name, engine, t), end=" ",
                          flush=True)
                    r = measure(engine, path, t, a.iters, a.warmup, a.timeout)
                    print(r.get("error") or "median %.2f ms" % r["median_ms"], flush=True)
                    failed = failed or "error" in r
                    runs[engine].append(r)
            rows.append({"model": name, "threads": t,
                         **{e: pool(rs) for e, rs in runs.items()}})

    g = lambda r, k: r.get(k)  # noqa: E731
    head = ("model", "thr", "ge med ms", "ge p90 ms", "ort med ms", "ort p90 ms", "med ge/ort",
            "p90 ge/ort", "ge RSS MiB", "ort RSS MiB", "RSS ge/ort")
    table = []
    for row in rows:
        ge_r, ort_r = row["ge"], row["ort"]
        table.append((row["model"], str(row["threads"]),
                      fmt(g(ge_r, "median_ms")), fmt(g(ge_r, "p90_ms")),
                      fmt(g(ort_r, "median_ms")), fmt(g(ort_r, "p90_ms")),
                      fmt(ratio(g(ge_r, "median_ms"), g(ort_r, "median_ms"))),
                      fmt(ratio(g(ge_r, "p90_ms"), g(ort_r, "p90_ms"))),
                      fmt(g(ge_r, "rss_mib"), "%.0f"), fmt(g(ort_r, "rss_mib"), "%.0f"),
                      fmt(ratio(g(ge_r, "rss_mib"), g(ort_r, "rss_mib")))))
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h)
              for i, h in enumerate(head)]
    print()
    print("  ".join(h.rjust(w) if i > 1 else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in table:
        print("  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    for row in rows:
        for engine in ("ge", "ort"):
            if "error" in row[engine]:
                print("%s %s %d thread(s): %s" % (row["model"], engine, row["threads"],
                                                  row[engine]["error"]))
    print("ratios are ge/ort: lower is better")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
