"""Random subsets of the optimisation passes through the public options, over the corpus of
tests/unit/test_pass_fuzz.c (ONNX node conformance cases that ge passes; see
tests/unit/data/gen_pass_fuzz_corpus.py).

tests/unit/test_pass_fuzz.c drives random orders and repeats through ge_pass_run_one; this test
checks the user-facing path: ge.InferenceSession with ge.graphOptimizationLevel=3 and a random
ge.passes.disable list (or level 1 with a random ge.passes.enable list) must compute what level 0
computes.  A fixed sample of cases and seeds keeps it to a few seconds.
"""
import os
import random
import re
import struct

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "unit", "data", "pass_fuzz")
N_CASES = 60
ROUNDS = 3
RTOL, ATOL = 1e-3, 1e-4


def read_inputs(path):
    from onnx import helper
    with open(path, "rb") as f:
        b = f.read()
    assert b[:4] == b"GEPF"
    (n,), off = struct.unpack_from("<I", b, 4), 8
    out = []
    for _ in range(n):
        code, rank = struct.unpack_from("<iI", b, off)
        off += 8
        dims = struct.unpack_from("<%dq" % rank, b, off)
        off += 8 * rank
        (nbytes,) = struct.unpack_from("<Q", b, off)
        off += 8
        dt = helper.tensor_dtype_to_np_dtype(code)
        out.append(np.frombuffer(b[off:off + nbytes], dtype=dt).reshape(dims).copy())
        off += nbytes
    return out


def pass_names(ge):
    """The pass table, from the message that names the known passes."""
    with pytest.raises(Exception) as e:
        ge.Session({"ge.passes.disable": "no_such_pass"})
    m = re.search(r"known: ([\w,]+)", str(e.value))
    assert m, str(e.value)
    return m.group(1).split(",")


def cases():
    if not os.path.isdir(CORPUS):
        return []
    names = sorted(f[:-5] for f in os.listdir(CORPUS) if f.endswith(".onnx"))
    step = max(1, len(names) // N_CASES)
    return names[::step][:N_CASES]


def run(ge, path, feeds, options):
    sess = ge.InferenceSession(path, threads=1, options=options)
    return sess.run(None, feeds)


def same(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
    return np.array_equal(a, b)


@pytest.mark.skipif(not cases(), reason="no pass fuzz corpus in %s" % CORPUS)
def test_random_pass_subsets(ge):
    names = pass_names(ge)
    assert len(names) >= 12
    failures = []
    for case in cases():
        path = os.path.join(CORPUS, case + ".onnx")
        sess0 = ge.InferenceSession(path, threads=1, options={"ge.graphOptimizationLevel": "0"})
        feeds = dict(zip([i.name for i in sess0.get_inputs()],
                         read_inputs(os.path.join(CORPUS, case + ".in"))))
        ref = sess0.run(None, feeds)
        rng = random.Random(case)
        for r in range(ROUNDS):
            subset = sorted(rng.sample(names, rng.randint(0, len(names))))
            if r % 2 == 0:
                opts = {"ge.graphOptimizationLevel": "3", "ge.passes.disable": ",".join(subset)}
            else:
                opts = {"ge.graphOptimizationLevel": "1", "ge.passes.enable": ",".join(subset)}
            try:
                got = run(ge, path, feeds, opts)
            except Exception as e:  # noqa: BLE001 - reported below with the options
                failures.append("%s %s: %s" % (case, opts, e))
                continue
            if len(got) != len(ref) or not all(same(g, w) for g, w in zip(got, ref)):
                failures.append("%s %s: outputs differ from level 0" % (case, opts))
    assert not failures, "\n".join(failures)
