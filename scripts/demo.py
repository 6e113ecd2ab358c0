#!/usr/bin/env python3
"""ge's demo: the main job on an embedded default model.

    .venv/bin/python scripts/demo.py --ge build/ge --out build/demo [--rounds N] [--iters N] [--threads N]

1. Makes the model: ResNet-50 (random seeded weights) through scripts/gen_models.sh into
   tests/models/out when it is absent; if torch is unavailable, a small CNN built with
   onnx.helper instead.
2. Runs it with the `ge` CLI (`ge run`) and with onnxruntime on the same input.
3. Prints the output check (max abs diff; allclose at rtol 1e-3, atol 1e-4: PASS/FAIL), the
   latency of ge and of onnxruntime in this process, taking turns (--rounds turns of --iters
   runs each, alternating which goes first, a short pause between turns): each engine's
   median run and the median over rounds of ge's turn / onnxruntime's turn, and the peak RSS
   of a `ge run` process and of an onnxruntime process.  A one-block timing of each engine
   swung by 2x on a shared machine; turns let a noisy neighbour weigh on both alike (as
   bench/bench.py does, which is where speed is measured).
Exits non-zero on a FAIL or when a step fails.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1e-3, 1e-4


def log(msg):
    print("demo: " + msg, flush=True)


# Runs argv[2:] and writes its peak RSS (KiB) to the file argv[1].  A fresh, small launcher
# process is needed: Linux counts the RSS a process had before exec() in its ru_maxrss, so a
# child forked straight from this (large) process would report at least this process's size.
LAUNCHER = r"""
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(cmd, env=None):
    """Runs cmd; returns (exit code, combined output, peak RSS in MiB of that process alone)."""
    with tempfile.TemporaryDirectory() as tmp:
        rss_file = os.path.join(tmp, "rss")
        out_file = os.path.join(tmp, "out")
        with open(out_file, "w") as out:
            rc = subprocess.call([sys.executable, "-S", "-c", LAUNCHER, rss_file] + list(cmd),
                                 stdout=out, stderr=subprocess.STDOUT, env=env)
        with open(out_file) as f:
            text = f.read()
        try:
            with open(rss_file) as f:
                rss = int(f.read()) / 1024.0  # ru_maxrss is in KiB
        except (OSError, ValueError):
            rss = float("nan")
        return rc, text, rss


def torch_available():
    try:
        r = subprocess.run([os.environ.get("GE_TORCH_PYTHON", "/usr/bin/python3"), "-c",
                            "import torch, torchvision"], capture_output=True, timeout=120)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def small_cnn(out_dir):
    """A small CNN built with onnx.helper (Conv-Relu-MaxPool-Conv-Relu-GAP-Gemm-Softmax)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(0)

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init("w1", (16, 3, 3, 3), 0.2), init("b1", (16,), 0.1),
             init("w2", (32, 16, 3, 3), 0.1), init("b2", (32,), 0.1),
             init("fc_w", (10, 32), 0.2), init("fc_b", (10,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["output"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    onnx.checker.check_model(model)
    path = os.path.join(out_dir, "small_cnn.onnx")
    onnx.save(model, path)
    in_dir = os.path.join(out_dir, "small_cnn.inputs")
    os.makedirs(in_dir, exist_ok=True)
    np.save(os.path.join(in_dir, "input.npy"),
            np.random.RandomState(1).standard_normal((1, 3, 224, 224)).astype(np.float32))
    return path, in_dir


def make_model(models_dir, out_dir):
    path = os.path.join(models_dir, "resnet50.onnx")
    in_dir = os.path.join(models_dir, "resnet50.inputs")
    if torch_available():
        log("making ResNet-50 (random seeded weights) in %s" % models_dir)
        env = dict(os.environ, GEN_MODELS="resnet50")
        r = subprocess.run([os.path.join(ROOT, "scripts", "gen_models.sh"), models_dir], env=env)
        if r.returncode != 0:
            raise SystemExit("demo: scripts/gen_models.sh failed (exit %d)" % r.returncode)
        return path, in_dir
    if os.path.isfile(path) and os.path.isdir(in_dir):
        log("torch is unavailable; using the existing %s" % path)
        return path, in_dir
    log("torch is unavailable; building a small CNN with onnx.helper instead")
    return small_cnn(out_dir)


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def time_runs(fn, iters, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


ORT_RSS_SNIPPET = r"""
import sys, numpy as np, onnxruntime as ort
path, threads = sys.argv[1], int(sys.argv[2])
feeds = {a.split('=', 1)[0]: np.load(a.split('=', 1)[1]) for a in sys.argv[3:]}
so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
s = ort.InferenceSession(path, so, providers=['CPUExecutionProvider'])
s.run(None, feeds)
"""


def ge_session_python(path, threads):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import ge
    return ge.InferenceSession(path, threads=threads)


def paired_latency(runs, rounds, iters):
    """runs: {engine: fn}.  Rounds of turns, one per engine, in alternating order: a turn is one
    untimed run, then `iters` timed ones, after a 50 ms pause (idle OpenMP threads stop
    spinning).  Returns {engine: median run ms} and the median over rounds of the first
    engine's median turn / the second's."""
    names = list(runs)
    times = {n: [] for n in names}
    ratios = []
    for k in range(rounds):
        turn = {}
        for n in (names if k % 2 == 0 else names[::-1]):
            time.sleep(0.05)
            runs[n]()
            t = []
            for _ in range(iters):
                t0 = time.perf_counter()
                runs[n]()
                t.append((time.perf_counter() - t0) * 1e3)
            times[n] += t
            turn[n] = statistics.median(t)
        ratios.append(turn[names[0]] / turn[names[1]])
    return {n: statistics.median(v) for n, v in times.items()}, statistics.median(ratios)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ge", default=os.path.join(ROOT, "build", "ge"), help="the ge CLI")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "demo"), help="work folder")
    ap.add_argument("--models", default=os.path.join(ROOT, "tests", "models", "out"),
                    help="where scripts/gen_models.sh puts the model")
    ap.add_argument("--rounds", type=int, default=10, help="turns of each engine (latency)")
    ap.add_argument("--iters", type=int, default=3, help="timed runs a turn")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if not os.access(a.ge, os.X_OK):
        raise SystemExit("demo: %s is not an executable: build it first (make build)" % a.ge)

    path, in_dir = make_model(a.models, a.out)
    sess = ort_session(path, a.threads)
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    files = {n: os.path.join(in_dir, n + ".npy") for n in in_names}
    feeds = {n: np.load(f) for n, f in files.items()}
    log("model %s: inputs %s, outputs %s" % (
        os.path.basename(path), ", ".join("%s%s" % (n, list(feeds[n].shape)) for n in in_names),
        ", ".join(out_names)))

    # 1. ge run, once: its output and its peak RSS
    ge_out = os.path.join(a.out, "ge_out")
    cmd = [a.ge, "run", path, "--output-dir", ge_out]
    for n, f in files.items():
        cmd += ["--input", "%s=%s" % (n, f)]
    log("running: " + " ".join(cmd))
    rc, text, ge_rss = run_measured(cmd)
    if rc != 0:
        print(text)
        raise SystemExit("demo: `ge run` failed (exit %d)" % rc)

    # 2. onnxruntime on the same input, and the check
    ref = dict(zip(out_names, sess.run(None, feeds)))
    ok = True
    max_diff = 0.0
    for n in out_names:
        f = os.path.join(ge_out, n + ".npy")
        if not os.path.isfile(f):
            log("ge wrote no %s" % f)
            ok = False
            continue
        got = np.load(f)
        if got.shape != ref[n].shape:
            log("output %s: ge shape %s, onnxruntime %s" % (n, got.shape, ref[n].shape))
            ok = False
            continue
        d = float(np.max(np.abs(got.astype(np.float64) - ref[n]))) if got.size else 0.0
        max_diff = max(max_diff, d)
        ok = ok and bool(np.allclose(got, ref[n], rtol=RTOL, atol=ATOL))

    # 3. latency: ge (the Python package) and onnxruntime taking turns in this process
    ge_ms = ratio = None
    try:
        ge_sess = ge_session_python(path, a.threads)
        med, ratio = paired_latency({"ge": lambda: ge_sess.run(None, feeds),
                                     "ort": lambda: sess.run(None, feeds)}, a.rounds, a.iters)
        ge_ms, ort_ms = med["ge"], med["ort"]
    except Exception as e:  # report, but the check above stands
        log("could not time ge through the Python package: %s" % e)
        ort_ms = time_runs(lambda: sess.run(None, feeds), a.iters * a.rounds)

    # 4. onnxruntime's peak RSS in its own process
    rc, text, ort_rss = run_measured([sys.executable, "-c", ORT_RSS_SNIPPET, path,
                                      str(a.threads)] + ["%s=%s" % kv for kv in files.items()])
    if rc != 0:
        print(text)
        ort_rss = float("nan")

    print()
    print("model          %s" % path)
    print("output check   max abs diff %.3g  (rtol %g, atol %g)  %s" % (
        max_diff, RTOL, ATOL, "PASS" if ok else "FAIL"))
    if ge_ms is not None:
        print("latency        ge %.2f ms   onnxruntime %.2f ms   ge/ort %.2f   "
              "(medians, %d threads; ge/ort: the median over %d rounds of paired turns of %d runs; "
              "`make bench` measures speed)" % (ge_ms, ort_ms, ratio, a.threads, a.rounds, a.iters))
    else:
        print("latency        ge n/a   onnxruntime %.2f ms (median, %d threads)" % (ort_ms, a.threads))
    print("peak RSS       ge run %.1f MiB   onnxruntime %.1f MiB   ge/ort %.2f" % (
        ge_rss, ort_rss, ge_rss / ort_rss))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
