#!/usr/bin/env python3
"""Per-operator time of ge and onnxruntime with the machine's noise taken out: for each node,
the fastest of --iters runs, summed over the nodes.  On a shared machine whose speed changes
from second to second, this separates what the kernels cost from what the neighbours cost
(the end-to-end medians of bench.py carry both).

    .venv/bin/python bench/op_minima.py --models tests/models/out [--only resnet50,gpt2]
                                        [--threads 1,2] [--iters 20] [--rounds 2] [--by-op]

ge: `ge profile MODEL -o TRACE --iters N --threads T --input ...` ($GE_BIN, else build/ge), the
per-step durations of its Chrome trace.  onnxruntime: precision.py's session (intra_op_num_threads=T,
inter_op_num_threads=1, sequential) with its profiler on, the `*_kernel_time` events of its profile.
Both run on the model's saved inputs (<model>.inputs/); the engines take turns --rounds times.
Prints per (model, threads) each round's sums and their ratio ge/ort; --by-op adds the sums
by operator type of the last round.
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def inputs_of(model):
    d = model[:-5] + ".inputs"
    return sorted(glob.glob(os.path.join(d, "*.npy")))


def ge_minima(model, threads, iters, tmp):
    ge = os.environ.get("GE_BIN", os.path.join(ROOT, "build", "ge"))
    trace = os.path.join(tmp, "ge.json")
    cmd = [ge, "profile", model, "-o", trace, "--iters", str(iters), "--threads", str(threads)]
    for f in inputs_of(model):
        cmd += ["--input", "%s=%s" % (os.path.basename(f)[:-4], f)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(trace) as fh:
        ev = json.load(fh)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    best, op = {}, {}
    for e in ev:
        if e.get("ph") != "X":
            continue
        key = (e["name"], e["args"].get("step"))
        best[key] = min(best.get(key, float("inf")), e["dur"])
        op[key] = e["args"]["op"]
    return best, op


def ort_minima(model, threads, iters, tmp):
    from precision import ort_session, saved_feeds  # the session and inputs precision.py times
    s = ort_session(model, threads, profile_prefix=os.path.join(tmp, "ort"))
    feeds = saved_feeds(model, s)
    for _ in range(iters):
        s.run(None, feeds)
    with open(s.end_profiling()) as fh:
        ev = json.load(fh)
    best, op = {}, {}
    for e in ev:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            best[e["name"]] = min(best.get(e["name"], float("inf")), e["dur"])
            op[e["name"]] = e["args"]["op_name"]
    return best, op


def by_op(best, op):
    t = collections.defaultdict(float)
    for k, v in best.items():
        t[op[k]] += v
    return sorted(t.items(), key=lambda x: -x[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(ROOT, "tests", "models", "out"))
    ap.add_argument("--only", default="resnet50,mobilenetv2,googlenet,bert_base,gpt2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--by-op", action="store_true")
    a = ap.parse_args()
    print("%-12s %3s %5s %10s %10s %8s" % ("model", "thr", "round", "ge ms", "ort ms", "ge/ort"))
    with tempfile.TemporaryDirectory() as tmp:
        for name in [m for m in a.only.split(",") if m]:
            model = os.path.join(a.models, name + ".onnx")
            if not os.path.exists(model):
                sys.exit("op_minima: %s not found (make models)" % model)
            for t in [int(x) for x in a.threads.split(",") if x]:
                for r in range(a.rounds):
                    g, gop = ge_minima(model, t, a.iters, tmp)
                    o, oop = ort_minima(model, t, a.iters, tmp)
                    gs, os_ = sum(g.values()) / 1e3, sum(o.values()) / 1e3
                    print("%-12s %3d %5d %10.2f %10.2f %8.2f" % (name, t, r + 1, gs, os_, gs / os_), flush=True)
                if a.by_op:
                    print("  ge:  " + "  ".join("%s %.2f" % (k, v / 1e3) for k, v in by_op(g, gop)[:8]))
                    print("  ort: " + "  ".join("%s %.2f" % (k, v / 1e3) for k, v in by_op(o, oop)[:8]))


if __name__ == "__main__":
    main()
