#!/usr/bin/env python3
"""ONNX backend conformance for ge.

Runs the cases of onnx's backend test suites (node, simple, pytorch-converted, pytorch-operator)
through ge.onnx_backend, using onnx's own runner (onnx.backend.test.runner.Runner: the same
model/input/output loading, the same assert_similar_outputs and per-case rtol/atol).

Every case runs in a worker subprocess (a pool of --jobs workers, forked from this process after
the cases are loaded, so a restart is cheap).  A case that kills its worker is a "crash", one
that runs longer than --timeout seconds a "timeout"; the worker is replaced and the run goes on.

    run.py                              node suite, prints "node: P passed, F failed of N"
    run.py --ratchet FILE               every case not in FILE passes, every case in FILE fails
                                        (or may pass, where its reason starts "(may pass)")
    run.py --update FILE                rewrites FILE with the failing cases and a reason each
    run.py --table                      ge and onnxruntime side by side on all four suites
    run.py -k PATTERN --jobs N --suites node,simple --verbose

Names: node cases as onnx names them ("test_abs"), other suites prefixed ("simple/test_...").
"""

import argparse
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import time
import traceback
import unittest
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))

ALL_SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator"]
_CATEGORY = {"node": "NodeModel", "simple": "SimpleModel",
             "pytorch-converted": "PyTorchConvertedModel",
             "pytorch-operator": "PyTorchOperatorModel"}

# The backend a worker runs cases with; set in the worker, after fork.
_ACTIVE = {"backend": None}


def _load_backend(name):
    if name == "ge":
        py = os.path.join(_REPO, "python")
        if py not in sys.path:
            sys.path.insert(0, py)
        import ge
        return ge.onnx_backend
    if name == "onnxruntime":
        import onnxruntime.backend
        return onnxruntime.backend
    raise ValueError("unknown backend %r" % name)


def _make_runner():
    """onnx's Runner over a dispatching backend (the real one is chosen inside each worker)."""
    from onnx.backend.base import Backend
    from onnx.backend.test.runner import Runner

    class Dispatch(Backend):
        @classmethod
        def supports_device(cls, device):
            return device == "CPU"

        @classmethod
        def is_compatible(cls, model, device="CPU", **kwargs):
            b = _ACTIVE["backend"]
            f = getattr(b, "is_compatible", None)
            return f(model, device, **kwargs) if callable(f) else True

        @classmethod
        def prepare(cls, model, device="CPU", **kwargs):
            return _ACTIVE["backend"].prepare(model, device, **kwargs)

        @classmethod
        def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
            return _ACTIVE["backend"].run_node(node, inputs, device, outputs_info, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = np_seterr()
        try:
            return Runner(Dispatch, None)
        finally:
            restore_np(old)


def np_seterr():
    import numpy as np
    return np.seterr(all="ignore")


def restore_np(old):
    import numpy as np
    np.seterr(**old)


def _case_table(runner, suites):
    """{case name: test function} for the CPU cases of `suites`, in a stable order."""
    cases = {}
    for suite in suites:
        items = runner._test_items.get(_CATEGORY[suite], {})
        for dev_name, item in sorted(items.items()):
            if not dev_name.endswith("_cpu"):
                continue
            base = dev_name[: -len("_cpu")]
            name = base if suite == "node" else "%s/%s" % (suite, base)
            cases[name] = item.func
    return cases


# ----------------------------------------------------------------------------- worker


def _reason(exc):
    """A one-line reason for a failure."""
    if isinstance(exc, AssertionError):
        msg = str(exc)
        if "incorrect shape" in msg:
            return "mismatch: shape"
        if "Not equal to tolerance" in msg or "Arrays are not equal" in msg:
            return "mismatch"
        if "dtype(" in msg:
            return "mismatch: dtype"
        if "Items are not equal" in msg:
            return "mismatch: output count or type"
        return "mismatch"
    text = str(exc).strip()
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    mod = type(exc).__module__
    name = type(exc).__name__
    if mod.startswith("ge") or name in ("GeError",) or "GeError" in [c.__name__ for c in
                                                                     type(exc).__mro__]:
        out = line or name
    else:
        out = "%s: %s" % (name, line) if line else name
    out = re.sub(r"\s+", " ", out)
    out = re.sub(r"^(graph \d+: )(graph \d+: )+", r"\1", out)  # a repeated context prefix
    return out[:160]


def _worker_main(conn, cases, backend_name, verbose):
    if not verbose:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")
    try:
        _ACTIVE["backend"] = _load_backend(backend_name)
        load_error = None
    except BaseException as e:  # noqa: BLE001
        load_error = "cannot load backend %s: %s" % (backend_name, _reason(e))
    while True:
        try:
            name = conn.recv()
        except (EOFError, OSError):
            return
        if name is None:
            return
        if load_error:
            conn.send((name, "fail", load_error))
            continue
        t0 = time.time()
        try:
            cases[name](None)
            res = ("pass", "")
        except unittest.SkipTest as e:
            res = ("skip", "skipped: %s" % str(e).splitlines()[0] if str(e) else "skipped")
        except BaseException as e:  # noqa: BLE001
            res = ("fail", _reason(e))
            if verbose:
                traceback.print_exc()
        if verbose:
            sys.stderr.write("[%s] %s %s %.2fs %s\n" % (backend_name, name, res[0],
                                                        time.time() - t0, res[1]))
        try:
            conn.send((name,) + res)
        except (EOFError, OSError):
            return


class _Worker:
    def __init__(self, ctx, cases, backend, verbose):
        self.parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, cases, backend, verbose),
                                daemon=True)
        self.proc.start()
        child.close()
        self.case = None
        self.started = 0.0

    def submit(self, name):
        self.case = name
        self.started = time.time()
        self.parent.send(name)

    def kill(self):
        try:
            self.proc.kill()
        except Exception:  # noqa: BLE001
            pass
        self.proc.join(5)
        self.parent.close()

    def stop(self):
        try:
            self.parent.send(None)
        except Exception:  # noqa: BLE001
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.kill()


def _crash_reason(w):
    w.proc.join(2)
    code = w.proc.exitcode
    if code is not None and code < 0:
        try:
            return "crash (%s)" % signal.Signals(-code).name
        except ValueError:
            return "crash (signal %d)" % -code
    if code:
        return "crash (exit %d)" % code
    return "crash"


def run_cases(cases, names, backend, jobs, timeout, verbose, progress=True):
    """{name: (status, reason)} for every name; status in pass/fail/skip."""
    ctx = multiprocessing.get_context("fork")
    results = {}
    todo = list(reversed(names))
    workers = []
    n_total = len(names)
    last_print = time.time()

    def spawn():
        return _Worker(ctx, cases, backend, verbose)

    try:
        for _ in range(max(1, min(jobs, len(names)))):
            workers.append(spawn())
        for w in workers:
            if todo:
                w.submit(todo.pop())
        while any(w.case is not None for w in workers):
            busy = [w for w in workers if w.case is not None]
            now = time.time()
            wait_for = max(0.05, min(timeout - (now - w.started) for w in busy))
            ready = multiprocessing.connection.wait(
                [w.parent for w in busy] + [w.proc.sentinel for w in busy], timeout=wait_for)
            for i, w in enumerate(workers):
                if w.case is None:
                    continue
                done = None
                if w.parent in ready:
                    try:
                        msg = w.parent.recv()
                        done = (msg[1], msg[2])
                    except (EOFError, OSError):
                        done = ("fail", _crash_reason(w))
                elif w.proc.sentinel in ready or not w.proc.is_alive():
                    # the worker died; the result may still be in the pipe
                    if w.parent.poll(0):
                        try:
                            msg = w.parent.recv()
                            done = (msg[1], msg[2])
                        except (EOFError, OSError):
                            done = ("fail", _crash_reason(w))
                    else:
                        done = ("fail", _crash_reason(w))
                elif time.time() - w.started > timeout:
                    done = ("fail", "timeout")
                    w.kill()
                if done is None:
                    continue
                results[w.case] = done
                w.case = None
                if not w.proc.is_alive() or done[1] == "timeout" or done[1].startswith("crash"):
                    w.kill()
                    w = workers[i] = spawn()
                if todo:
                    w.submit(todo.pop())
            if progress and sys.stderr.isatty() and time.time() - last_print > 1:
                last_print = time.time()
                sys.stderr.write("\r[%s] %d/%d" % (backend, len(results), n_total))
                sys.stderr.flush()
    finally:
        for w in workers:
            w.stop()
        if progress and sys.stderr.isatty():
            sys.stderr.write("\r" + " " * 40 + "\r")
    return results


# ----------------------------------------------------------------------------- ratchet file


# A ratchet entry whose reason starts with this may pass as well as fail: the case compares an
# unseeded random draw with data onnx drew once (test_bernoulli's 10 booleans match by chance in
# about 1 run of 60), so neither outcome says anything about ge.
MAY_PASS = "(may pass)"


def read_ratchet(path):
    """{name: reason} from a ratchet file (missing file: empty)."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            body, _, reason = line.partition("#")
            name = body.strip()
            if name:
                out[name] = reason.strip()
    return out


def write_ratchet(path, entries):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# ONNX backend cases that ge is known to fail (tests/conformance/run.py "
                "--update FILE rewrites it).\n# One case per line, then '  # ' and the reason.\n")
        for name in sorted(entries):
            reason = entries[name].replace("\n", " ").strip() or "fails"
            f.write("%s  # %s\n" % (name, reason))


# ----------------------------------------------------------------------------- main


def _summary(suites, names, results):
    lines = []
    for suite in suites:
        mine = [n for n in names if _suite_of(n) == suite]
        p = sum(1 for n in mine if results[n][0] == "pass")
        s = sum(1 for n in mine if results[n][0] == "skip")
        f = len(mine) - p - s
        line = "%s: %d passed, %d failed of %d" % (suite, p, f, len(mine))
        if s:
            line += " (%d skipped)" % s
        lines.append(line)
    return lines


def _suite_of(name):
    return name.split("/", 1)[0] if "/" in name else "node"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ratchet", metavar="FILE", help="fail unless exactly the listed cases fail")
    ap.add_argument("--update", metavar="FILE", help="rewrite FILE with the failing cases")
    ap.add_argument("--table", action="store_true", help="ge vs onnxruntime per suite")
    ap.add_argument("--suites", help="comma-separated: %s (default node; all for --table)"
                    % ",".join(ALL_SUITES))
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this regex")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
    ap.add_argument("--list", action="store_true", help="list the selected cases and exit")
    ap.add_argument("--failures", action="store_true", help="print every failing case")
    ap.add_argument("--verbose", "-v", action="store_true", help="worker output and timings")
    ap.add_argument("--backend", default="ge", choices=["ge", "onnxruntime"],
                    help="backend of the main run (default ge)")
    args = ap.parse_args(argv)

    if args.suites:
        suites = [s.strip() for s in args.suites.split(",") if s.strip()]
        bad = [s for s in suites if s not in ALL_SUITES]
        if bad:
            ap.error("unknown suite(s) %s; known: %s" % (", ".join(bad), ", ".join(ALL_SUITES)))
    else:
        suites = list(ALL_SUITES) if args.table else ["node"]

    t0 = time.time()
    runner = _make_runner()
    cases = _case_table(runner, suites)
    names = sorted(cases)
    if args.pattern:
        rx = re.compile(args.pattern)
        names = [n for n in names if rx.search(n)]
    if args.list:
        print("\n".join(names))
        return 0
    if not names:
        print("no case matches")
        return 1 if args.ratchet else 0

    results = run_cases(cases, names, args.backend, args.jobs, args.timeout, args.verbose)
    for line in _summary(suites, names, results):
        print(line)
    status = 0

    if args.failures:
        for n in names:
            if results[n][0] == "fail":
                print("  FAIL %s: %s" % (n, results[n][1]))

    if args.table:
        ort = run_cases(cases, names, "onnxruntime", args.jobs, args.timeout, args.verbose)
        rows = [("suite", "ge passed", "onnxruntime passed", "total")]
        for suite in suites:
            mine = [n for n in names if _suite_of(n) == suite]
            rows.append((suite, str(sum(results[n][0] == "pass" for n in mine)),
                         str(sum(ort[n][0] == "pass" for n in mine)), str(len(mine))))
        rows.append(("all", str(sum(results[n][0] == "pass" for n in names)),
                     str(sum(ort[n][0] == "pass" for n in names)), str(len(names))))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        print()
        for k, r in enumerate(rows):
            print("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
            if k == 0:
                print("|" + "|".join("-" * (w + 2) for w in widths) + "|")

    if args.update:
        entries = read_ratchet(args.update)
        for n in names:
            if entries.get(n, "").startswith(MAY_PASS):
                continue
            entries.pop(n, None)
            if results[n][0] == "fail":
                entries[n] = results[n][1]
        # drop entries for cases that no longer exist in the suites that ran
        known = set(cases)
        for n in list(entries):
            if _suite_of(n) in suites and n not in known:
                del entries[n]
        write_ratchet(args.update, entries)
        print("wrote %s: %d expected failures" % (args.update, len(entries)))

    if args.ratchet:
        expected = read_ratchet(args.ratchet)
        new_fail, now_pass = [], []
        for n in names:
            st, why = results[n]
            if n in expected and st == "pass" and not expected[n].startswith(MAY_PASS):
                now_pass.append(n)
            elif n not in expected and st == "fail":
                new_fail.append((n, why))
        if new_fail or now_pass:
            status = 1
            print("\nratchet %s violated:" % args.ratchet)
            for n, why in new_fail:
                print("  FAIL %s: %s" % (n, why))
            for n in now_pass:
                print("  %s now passes, remove it from the ratchet" % n)
            print("%d unexpected failure(s), %d case(s) now pass; fix them or run "
                  "tests/conformance/run.py --update %s" % (len(new_fail), len(now_pass),
                                                            args.ratchet))
        else:
            print("ratchet %s: ok" % args.ratchet)

    print("(%.0f s)" % (time.time() - t0))
    return status


if __name__ == "__main__":
    sys.exit(main())
