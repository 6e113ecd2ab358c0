#!/usr/bin/env python3
"""Writes a small seed corpus of ONNX models for the importer fuzzer (tests/fuzz/fuzz_onnx.c).

    .venv/bin/python tests/fuzz/gen_corpus.py OUT_DIR

Each seed is tiny (well under libFuzzer's default max_len) and exercises a different part of
the importer: dtypes, typed fields, strings, attributes of every kind, subgraphs with outer
references, sequences/optionals, sparse initializers, functions and metadata."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out, name, graph, opset=17, functions=(), **kw):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, 1) for d in {f.domain for f in functions}],
                          functions=list(functions), **kw)
    m.ir_version = 8
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    w = numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"], name="add"),
                           helper.make_node("Relu", ["t"], ["y"], name="relu")],
                          "simple", [x], [y], [w],
                          value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    save(out, "simple", g, doc_string="seed", producer_name="gen_corpus")

    # every dtype, raw and typed
    inits, outs = [], []
    for i, dt in enumerate([np.float32, np.float16, np.float64, np.int8, np.int16, np.int32,
                            np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]):
        a = (np.arange(4) % 2).astype(dt)
        t = numpy_helper.from_array(a, f"c{i}")
        inits.append(t)
        outs.append(helper.make_tensor_value_info(f"c{i}", t.data_type, [4]))
    inits.append(helper.make_tensor("typed_f", TensorProto.FLOAT, [2], [1.0, 2.0]))
    inits.append(helper.make_tensor("typed_h", TensorProto.FLOAT16, [2], [1.0, 2.0]))
    inits.append(helper.make_tensor("typed_bf", TensorProto.BFLOAT16, [2], [1.0, 2.0]))
    inits.append(helper.make_tensor("strs", TensorProto.STRING, [2], [b"ab", b""]))
    outs += [helper.make_tensor_value_info(n, t, [2]) for n, t in
             [("typed_f", 1), ("typed_h", 10), ("typed_bf", 16), ("strs", 8)]]
    save(out, "dtypes", helper.make_graph([], "dtypes", [], outs, inits))

    # attributes of every kind
    sub = helper.make_graph([helper.make_node("Neg", ["x"], ["n"])], "sub", [],
                            [helper.make_tensor_value_info("n", TensorProto.FLOAT, [3])])
    node = helper.make_node("Custom", ["x"], ["y"], name="attrs", domain="ai.test",
                            f=1.5, i=3, s="str", fs=[1.0, 2.0], is_=[1, 2], ss=["a", "b"],
                            t=numpy_helper.from_array(np.ones(2, np.int32)),
                            ts=[numpy_helper.from_array(np.ones(1, np.int64))],
                            g=sub, gs=[sub, sub])
    g = helper.make_graph([node], "attrs", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("ai.test", 1)])
    with open(os.path.join(out, "attrs.onnx"), "wb") as f:
        f.write(m.SerializeToString())

    # If with outer-scope references
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    then_g = helper.make_graph([helper.make_node("Abs", ["x"], ["a"])], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "else", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 3])])
    g = helper.make_graph([helper.make_node("If", ["cond"], ["y"], then_branch=then_g,
                                            else_branch=else_g)], "if", [x, cond], [y])
    save(out, "if", g)

    # Loop, sequences and optionals
    it = helper.make_tensor_value_info("it", TensorProto.INT64, [])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]),
                              helper.make_node("Add", ["v", "x"], ["v_out"])], "body",
                             [it, c, helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
    trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body),
                           helper.make_node("SequenceConstruct", ["x", "x"], ["seq"]),
                           helper.make_node("Optional", ["x"], ["opt"])],
                          "loop", [x, cond], [y,
                          helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None),
                          helper.make_value_info("opt", helper.make_optional_type_proto(
                              helper.make_tensor_type_proto(TensorProto.FLOAT, None)))], [trip])
    save(out, "loop", g, opset=18)

    # sparse initializer
    vals = numpy_helper.from_array(np.array([7.0, 9.0], np.float32), "sp")
    idx = numpy_helper.from_array(np.array([1, 4], np.int64), "sp_idx")
    sp = helper.make_sparse_tensor(vals, idx, [3, 2])
    g = helper.make_graph([], "sparse", [], [helper.make_tensor_value_info("sp", 1, [3, 2])],
                          sparse_initializer=[sp])
    save(out, "sparse", g)

    # a model-local function
    f = helper.make_function("local", "MyRelu", ["X"], ["Y"], [helper.make_node("Relu", ["X"], ["Y"])],
                             [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("MyRelu", ["x"], ["y"], domain="local")], "fn", [x], [y])
    save(out, "function", g, functions=[f])

    # external data reference (refused when fuzzing: no base directory)
    t = TensorProto()
    t.name, t.data_type = "ext", TensorProto.FLOAT
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "w.bin"), ("offset", "0"), ("length", "16")]:
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([], "ext", [], [helper.make_tensor_value_info("ext", 1, [4])], [t])
    save(out, "external", g)
    print(f"gen_corpus: wrote {len(os.listdir(out))} seeds to {out}")


if __name__ == "__main__":
    main()
