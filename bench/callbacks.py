#!/usr/bin/env python3
"""How much of a slow Summary callback a run's latency includes, sync vs async mode.

    PYTHONPATH=python GE_LIBRARY=build/libge.so .venv/bin/python bench/callbacks.py [--runs N] [--sleep-ms MS]

A small graph (y = x * w, with a Summary of y) runs N times with a Summary callback that
sleeps MS milliseconds.  In sync mode (ge.callbackMode=sync) run_graph returns after the
callback; in async mode it returns once the data is queued, and the callback thread catches
up (closing the session drains the queue: every call is delivered, which is checked).
Prints the median run_graph latency of each mode and their ratio.
"""
import argparse
import statistics
import time

import numpy as np

import ge


def build():
    g = ge.Graph("bench_cb")
    g.add_input("x", np.float32, [256])
    g.add_constant("w", np.linspace(0, 1, 256, dtype=np.float32))
    g.add_node("Mul", ["x", "w"], ["y"], name="mul")
    g.add_node("ai.ge::Summary", ["y"], [], name="summary_y", tag="y", type="histogram")
    g.add_output("y")
    return g


def measure(mode, runs, sleep_s):
    delivered = []

    def slow(graph_id, params):
        time.sleep(sleep_s)
        delivered.append(float(params["y"].sum()))
        return 0

    s = ge.Session({"ge.callbackMode": mode})
    g = build()
    s.add_graph(1, g)
    g.free()
    s.register_callback("Summary", slow)
    x = np.ones(256, np.float32)
    s.run_graph(1, [x])  # compile outside the timing
    lat = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run_graph(1, [x])
        lat.append((time.perf_counter() - t0) * 1e3)
    t0 = time.perf_counter()
    s.close()  # drains the async queue
    drain = (time.perf_counter() - t0) * 1e3
    assert len(delivered) == runs + 1, f"{mode}: {len(delivered)} of {runs + 1} callbacks delivered"
    return statistics.median(lat), max(lat), drain


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sleep-ms", type=float, default=50.0)
    a = ap.parse_args()
    ge.initialize()
    print(f"callbacks: {a.runs} runs, Summary callback sleeping {a.sleep_ms:g} ms")
    print(f"{'mode':6} {'median ms':>10} {'max ms':>8} {'drain ms':>9}")
    res = {}
    for mode in ("sync", "async"):
        med, mx, drain = measure(mode, a.runs, a.sleep_ms / 1e3)
        res[mode] = med
        print(f"{mode:6} {med:10.3f} {mx:8.3f} {drain:9.1f}")
    print(f"async/sync median latency: {res['async'] / res['sync']:.4f} "
          f"(every callback delivered in both modes)")


if __name__ == "__main__":
    main()
