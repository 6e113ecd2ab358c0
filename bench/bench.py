#!/usr/bin/env python3
"""ge vs onnxruntime on the reference models, measured in the same run.

    .venv/bin/python bench/bench.py --models tests/models/out [--threads 1,2] [--iters 20]
                                    [--warmup 3] [--rounds 1] [--only resnet50,bert_base | --all]
                                    [--busy-core CPU] [--json F]

Each (model, engine, threads) runs in its own worker process: it loads the model, runs
--warmup untimed iterations, then waits for its turns; the parent reads that process's peak RSS
(os.wait4) when it exits.  ge runs through the Python package (ge.InferenceSession(path,
threads=N)); onnxruntime with intra_op_num_threads=N, inter_op_num_threads=1, sequential
execution, CPUExecutionProvider.  The two workers of a (model, threads) take --rounds turns
each, alternating (ge, ort, ort, ge, ...), --iters timed iterations a turn after --turn-warmup
untimed ones (default 1), with a 0.1 s pause between turns so that one engine's idle threads
have stopped spinning before the other runs; the median and p90 are over all of an engine's
iterations, and "paired" is the median over rounds of ge's median turn / onnxruntime's turn of
the same round.  Many short turns let a noisy
neighbour on a shared machine, whose load changes from second to second, weigh on both engines
alike.
Ratios are ge/ort: lower is better.  See bench/README.md.
"""
import argparse
import json
import math
import os
import select
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


def median_ci(xs, level=0.95):
    """A distribution-free confidence interval of the median of xs: the order statistics
    x(j), x(n-1-j) (sorted, from 0) with the largest j whose interval still covers the median
    with probability >= level, i.e. P(j + 1 <= B <= n - 1 - j) for B ~ Binomial(n, 1/2).
    (None, None) when n is too small for any interval to reach that level."""
    xs = sorted(xs)
    n = len(xs)
    pmf = [math.comb(n, b) / 2.0 ** n for b in range(n + 1)]
    best = None
    for j in range(n // 2):
        if sum(pmf[j + 1:n - j]) >= level:
            best = j
    return (None, None) if best is None else (xs[best], xs[n - 1 - best])


def paired_summary(ratios):
    """The paired ratio as the tables print it: median and quartiles of the per-round ratios,
    and the 95% confidence interval of that median (median_ci)."""
    lo, hi = median_ci(ratios)
    return {"median": statistics.median(ratios), "q1": percentile(ratios, 0.25),
            "q3": percentile(ratios, 0.75), "ci_lo": lo, "ci_hi": hi}


def one_thread_runs(sess):
    """ge's runs so far that the adaptive thread count took on one thread (0 for onnxruntime,
    and for ge at one thread)."""
    stats = getattr(sess, "run_stats", None)
    return stats()["runs_one_thread"] if stats else 0


def worker(a):
    """Loads the model, runs --warmup iterations, prints {"first_ms": ...}; then for each line
    "run N W" on stdin runs W untimed and N timed iterations and prints {"times_ms": [...]};
    exits at "quit" or the end of stdin."""
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
    print(json.dumps({"first_ms": first_ms}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] != "run":
            break
        for _ in range(int(cmd[2]) if len(cmd) > 2 else 0):
            sess.run(None, feeds)
        one0 = one_thread_runs(sess)
        times = []
        for _ in range(int(cmd[1])):
            t = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t) * 1e3)
        print(json.dumps({"times_ms": times, "one_thread": one_thread_runs(sess) - one0}), flush=True)
    return 0


# ----------------------------------------------------------------------------- parent

class Worker:
    """One engine's worker process for one (model, threads); error set once it has failed."""

    def __init__(self, engine, model, threads, warmup, timeout):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--model", model,
               "--threads", str(threads), "--warmup", str(warmup)]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                  env=env, text=True)
        self.timeout, self.error, self.times, self.first_ms = timeout, None, [], None
        self.one_thread = 0
        r = self._reply()
        if r is not None:
            self.first_ms = r.get("first_ms")

    def _fail(self, why):
        if self.error is None:
            self.err.seek(0)
            lines = [ln for ln in self.err.read().strip().splitlines() if ln.strip()]
            self.error = why + (": " + lines[-1] if lines else "")
        return None

    def _reply(self):
        ready, _, _ = select.select([self.p.stdout], [], [], self.timeout)
        if not ready:
            self.p.kill()
            return self._fail("timed out after %ds" % self.timeout)
        line = self.p.stdout.readline()
        if not line:
            return self._fail("exit %s" % self.p.poll())
        try:
            return json.loads(line)
        except ValueError:
            return self._fail("unreadable worker output: %r" % line[-200:])

    def turn(self, iters, untimed=0):
        if self.error is not None:
            return
        try:
            self.p.stdin.write("run %d %d\n" % (iters, untimed))
            self.p.stdin.flush()
        except OSError:
            self._fail("exit %s" % self.p.poll())
            return
        r = self._reply()
        if r is not None:
            self.times += r["times_ms"]
            self.one_thread += r.get("one_thread", 0)
            return r["times_ms"]

    def finish(self):
        """Ends the worker; its result (median, p90, peak RSS) or its error."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        _, status, usage = os.wait4(self.p.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if self.error is None and code != 0:
            self._fail("exit %d" % code)
        self.err.close()
        if self.error is not None:
            return {"error": self.error}
        return {"median_ms": statistics.median(self.times), "p90_ms": percentile(self.times, 0.9),
                "first_ms": self.first_ms, "iters": len(self.times), "times_ms": self.times,
                "one_thread_runs": self.one_thread,
                "rss_mib": usage.ru_maxrss / 1024.0}


def measure_pair(model, threads, a):
    """ge and onnxruntime on one model at one thread count, taking turns."""
    workers = {}
    for engine in ("ge", "ort"):  # loaded one after the other: peak RSS is each process's own
        workers[engine] = Worker(engine, model, threads, a.warmup, a.timeout)
    pairs = []  # per round: ge's median turn time / onnxruntime's, both measured within ~a second
    for k in range(max(a.rounds, 1)):
        turn = {}
        for engine in (("ge", "ort") if k % 2 == 0 else ("ort", "ge")):
            turn[engine] = workers[engine].turn(a.iters, a.turn_warmup)
            time.sleep(0.1)
        if turn["ge"] and turn["ort"]:
            pairs.append(statistics.median(turn["ge"]) / statistics.median(turn["ort"]))
    r = {engine: w.finish() for engine, w in workers.items()}
    if pairs and not any("error" in x for x in r.values()):
        r["paired"] = dict(paired_summary(pairs), ratios=pairs)
    return r


def ge_run_path():
    """Which of the package's run paths the workers take (asked in a child process, so that this
    one loads no engine)."""
    code = ("import sys; sys.path.insert(0, %r); import ge._lib as L; "
            "print('C run path (%%s)' %% L.fast.__file__ if L.fast else 'ctypes run path')"
            % os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "? (%s)" % (r.stderr.strip().splitlines() or ["no output"])[-1]


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
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per turn")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="turns each engine takes, alternating (--iters timed iterations a turn)")
    ap.add_argument("--turn-warmup", type=int, default=1,
                    help="untimed iterations at the start of each turn (after the other engine's turn "
                         "and the pause, a first run wakes sleeping threads and refills caches)")
    ap.add_argument("--timeout", type=int, default=1800,
                    help="seconds a worker may take to load or to run one turn")
    ap.add_argument("--busy-core", type=int, default=None, metavar="CPU",
                    help="keep this CPU busy with a spinning process pinned to it while measuring "
                         "(another tenant holding a core: how each engine's threads cope)")
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
    print("bench: %s; threads %s; %d warm-up, then %d alternating turns of %d iterations per engine" % (
        ", ".join(names), ",".join(map(str, threads)), a.warmup, max(a.rounds, 1), a.iters), flush=True)
    print("bench: ge runs through the Python package's %s" % ge_run_path(), flush=True)

    busy = None
    if a.busy_core is not None:
        if a.busy_core not in os.sched_getaffinity(0):
            print("bench: --busy-core %d is not a CPU this process may use (%s)"
                  % (a.busy_core, sorted(os.sched_getaffinity(0))), file=sys.stderr)
            return 2
        busy = subprocess.Popen([sys.executable, "-c", "import os\nos.sched_setaffinity(0, {%d})\n"
                                 "while True: pass" % a.busy_core])
        print("bench: a spinning process (pid %d) holds CPU %d throughout" % (busy.pid, a.busy_core),
              flush=True)
    try:
        return measure_all(a, names, threads)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def measure_all(a, names, threads):
    rows, failed = [], False
    for name in names:
        path = os.path.join(a.models, name + ".onnx")
        if not os.path.isfile(path):
            print("bench: %s is missing: run `make models`" % path, file=sys.stderr)
            failed = True
            continue
        for t in threads:
            print("bench: %-12s %d thread(s) ..." % (name, t), end=" ", flush=True)
            r = measure_pair(path, t, a)
            print(" | ".join("%s %s" % (e, r[e].get("error") or "median %.2f ms" % r[e]["median_ms"])
                             for e in ("ge", "ort")), flush=True)
            failed = failed or any("error" in r[e] for e in r)
            rows.append({"model": name, "threads": t, **r})

    g = lambda r, k: r.get(k)  # noqa: E731
    head = ("model", "thr", "ge med ms", "ge p90 ms", "ort med ms", "ort p90 ms", "med ge/ort",
            "p90 ge/ort", "paired ge/ort", "paired 95% CI", "ge RSS MiB", "ort RSS MiB", "RSS ge/ort",
            "ge 1-thr runs")
    table = []
    for row in rows:
        ge_r, ort_r, pr = row["ge"], row["ort"], row.get("paired")
        table.append((row["model"], str(row["threads"]),
                      fmt(g(ge_r, "median_ms")), fmt(g(ge_r, "p90_ms")),
                      fmt(g(ort_r, "median_ms")), fmt(g(ort_r, "p90_ms")),
                      fmt(ratio(g(ge_r, "median_ms"), g(ort_r, "median_ms"))),
                      fmt(ratio(g(ge_r, "p90_ms"), g(ort_r, "p90_ms"))),
                      "-" if pr is None else "%.2f (%.2f-%.2f)" % (pr["median"], pr["q1"], pr["q3"]),
                      "-" if pr is None or pr["ci_lo"] is None else "%.2f-%.2f" % (pr["ci_lo"], pr["ci_hi"]),
                      fmt(g(ge_r, "rss_mib"), "%.0f"), fmt(g(ort_r, "rss_mib"), "%.0f"),
                      fmt(ratio(g(ge_r, "rss_mib"), g(ort_r, "rss_mib"))),
                      "-" if row["threads"] < 2 or "iters" not in ge_r else
                      "%d/%d" % (ge_r["one_thread_runs"], ge_r["iters"])))
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
    print("ratios are ge/ort: lower is better; paired: the median over rounds of ge's median turn "
          "over onnxruntime's adjacent one (quartiles in brackets); its 95% CI: the confidence "
          "interval of that median (order statistics of the per-round ratios); ge 1-thr runs: of ge's "
          "timed runs, those its adaptive thread count (ge.exec.adaptiveThreads) took on one thread "
          "because the threads kept waiting for one another")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
