#!/usr/bin/env python3
"""Writes the corpus of tests/unit/test_pass_fuzz.c: ONNX node conformance cases that ge passes
today (not in tests/conformance/expected_failures.txt) whose graphs have at least two nodes, or
one node of an op that a pass rewrites.

    .venv/bin/python tests/unit/data/gen_pass_fuzz_corpus.py     (about a minute)

Output: tests/unit/data/pass_fuzz/<case>.onnx and <case>.in, one pair per case.  A .in file is
"GEPF" then u32 count, then per input: i32 ONNX dtype, u32 rank, i64 dims[rank], u64 nbytes and
the raw little-endian bytes.  Cases with non-tensor or string inputs, random ops, or more than
16 KiB of inputs (or model) are left out; the corpus is capped at MAX_CASES,
multi-node graphs first.
"""
import os
import re
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
OUT = os.path.join(HERE, "pass_fuzz")
MAX_CASES = 300
MAX_MULTI = 240
MAX_INPUT_BYTES = 16 << 10
MAX_MODEL_BYTES = 16 << 10
REWRITTEN = {"Identity", "Dropout", "Reshape", "Transpose", "Cast", "Constant", "Add", "Mul",
             "Pad", "BatchNormalization", "Conv", "Gemm", "MatMul", "Relu", "Squeeze",
             "Unsqueeze", "Flatten"}
RANDOM = re.compile(r"Random|Bernoulli|Multinomial|Dropout.*(training|mask)", re.I)


def failing():
    path = os.path.join(REPO, "tests", "conformance", "expected_failures.txt")
    out = set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.add(line)
    return out


def spread(items, k):
    if len(items) <= k:
        return list(items)
    return [items[(i * len(items)) // k] for i in range(k)]


def encode(c, bad):
    """(model bytes, inputs blob) of an eligible case, else None."""
    import onnx
    if c.name in bad or not c.data_sets:
        return None
    m = c.model
    ops = [nd.op_type for nd in m.graph.node]
    if any(RANDOM.search(op) for op in ops) or "random" in c.name \
            or ("dropout" in c.name and "training" in c.name):
        return None
    if len(ops) < 2 and not (set(ops) & REWRITTEN):
        return None
    if any(nd.domain not in ("", "ai.onnx") for nd in m.graph.node):
        return None
    inputs = c.data_sets[0][0]
    if len(inputs) != len(m.graph.input):
        return None
    blob = [b"GEPF", struct.pack("<I", len(inputs))]
    total = 0
    for vi, a in zip(m.graph.input, inputs):
        if not isinstance(a, np.ndarray) or a.dtype.kind in "OUSV":
            return None
        try:
            code = onnx.helper.np_dtype_to_tensor_dtype(a.dtype)
        except Exception:
            return None
        if vi.type.tensor_type.elem_type != code:
            return None
        raw = np.ascontiguousarray(a).tobytes()
        total += len(raw)
        blob.append(struct.pack("<iI", code, a.ndim))
        blob.append(struct.pack("<%dq" % a.ndim, *a.shape))
        blob.append(struct.pack("<Q", len(raw)))
        blob.append(raw)
    mb = m.SerializeToString()
    if total > MAX_INPUT_BYTES or len(mb) > MAX_MODEL_BYTES:
        return None
    return mb, b"".join(blob)


def main():
    import onnx.backend.test.loader as loader
    np.seterr(all="ignore")
    bad = failing()
    cases = sorted(loader.load_node_model_tests(), key=lambda c: c.name)
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    multi, single = [], []
    for c in cases:
        e = encode(c, bad)
        if e:
            (multi if len(c.model.graph.node) >= 2 else single).append((c.name,) + e)
    # an even spread over the alphabet: graphs of several nodes (what the passes rewrite) get
    # MAX_MULTI places, single rewritable nodes the rest
    chosen = spread(multi, MAX_MULTI)
    chosen += spread(single, MAX_CASES - len(chosen))
    for name, mb, blob in chosen:
        with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
            f.write(mb)
        with open(os.path.join(OUT, name + ".in"), "wb") as f:
            f.write(blob)
    n = len(chosen)
    print("%d of %d multi-node and %d single-node candidates" % (n, len(multi), len(single)),
          file=sys.stderr)
    print("%d cases in %s" % (n, OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
