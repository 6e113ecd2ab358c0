#!/usr/bin/env python3
"""The Python package's two run paths on the same session: the C one (ge._gefast) and ctypes.

    .venv/bin/python bench/run_path.py [--models tests/models/out] [--only mobilenetv2]
                                       [--threads 1,2] [--rounds 200] [--iters 3] [--into]

One process, one session per (model, threads); the two paths take turns of --iters runs
(alternating which goes first), and the table prints each path's median run of
InferenceSession.run(None, feeds) on the saved inputs, their difference and ratio (C / ctypes:
lower is better).  --into times Session.run_graph(1, inputs, outputs=arrays) instead, the run
writing into preallocated output arrays.  The outputs of both paths are checked equal first.
Exits 2 where the C path is not built (docs/python.md).
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.environ.get("GE_MODELS", os.path.join(ROOT, "tests", "models", "out")))
    ap.add_argument("--only", default="mobilenetv2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--into", action="store_true", help="time run_graph(..., outputs=arrays)")
    a = ap.parse_args()
    import numpy as np
    import ge
    from ge import _lib
    fast = _lib.fast
    if fast is None:
        print("run_path: the C run path is not built (no _gefast.so next to %s)" % _lib.library_path,
              file=sys.stderr)
        return 2
    print("%-12s %3s  %12s  %12s  %8s  %8s" % ("model", "thr", "ctypes ms", "C ms", "diff us", "C/ctypes"))
    for name in [m for m in a.only.split(",") if m]:
        path = os.path.join(a.models, name + ".onnx")
        if not os.path.exists(path):
            print("run_path: %s is missing: run `make models`" % path, file=sys.stderr)
            return 1
        for thr in [int(t) for t in a.threads.split(",") if t]:
            sess = ge.InferenceSession(path, threads=thr)
            feeds = {i.name: np.load(os.path.join(path[:-5] + ".inputs", i.name + ".npy"))
                     for i in sess.get_inputs()}
            call = lambda: sess.run(None, feeds)  # noqa: E731
            if a.into:
                into = ge.Session({"ge.intraOpThreads": str(thr)})
                into.add_graph(1, ge.Graph.load(path))
                ins = [feeds[i.name] for i in sess.get_inputs()]
                outs = [np.empty_like(o) for o in sess.run(None, feeds)]
                call = lambda: into.run_graph(1, ins, outputs=outs)  # noqa: E731
            try:
                _lib.fast = None
                want = [o.copy() for o in call()]  # (--into: the next call writes the same arrays)
                _lib.fast = fast
                got = call()
                if not all(np.array_equal(x, y) for x, y in zip(want, got)):
                    print("run_path: %s: the two paths' outputs differ" % name, file=sys.stderr)
                    return 1
                times = ([], [])
                for r in range(a.rounds):
                    for which in ((0, 1) if r % 2 == 0 else (1, 0)):
                        _lib.fast = None if which == 0 else fast
                        for _ in range(a.iters):
                            t = time.perf_counter()
                            call()
                            times[which].append((time.perf_counter() - t) * 1e3)
            finally:
                _lib.fast = fast
            slow, quick = statistics.median(times[0]), statistics.median(times[1])
            print("%-12s %3d  %12.3f  %12.3f  %8.1f  %8.3f" % (name, thr, slow, quick, (slow - quick) * 1e3,
                                                              quick / slow), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
