"""ONNX export: models loaded by ge and saved back pass onnx.checker (full check) and keep
their nodes, attributes, initializers and input/output types; load -> save -> load -> save
is byte-stable."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def _models():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    w = numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")
    yield "simple", helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["t"], name="add"),
         helper.make_node("LeakyRelu", ["t"], ["y"], name="lrelu", alpha=0.25)],
        "simple", [x], [y], [w]), []

    then_g = helper.make_graph([helper.make_node("Abs", ["x"], ["a"])], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "else", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 3])])
    yield "if", helper.make_graph([helper.make_node("If", ["cond"], ["y"], then_branch=then_g,
                                                    else_branch=else_g)], "if", [x, cond], [y]), []

    inits = [numpy_helper.from_array((np.arange(6).reshape(2, 3) % 3).astype(dt), "c%d" % i)
             for i, dt in enumerate([np.float16, np.float64, np.int8, np.int16, np.int32,
                                     np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                                     np.bool_])]
    inits.append(helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"c"]))
    outs = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits]
    yield "dtypes", helper.make_graph([], "dtypes", [], outs, inits), []

    f = helper.make_function("local", "MyRelu", ["X"], ["Y"],
                             [helper.make_node("Relu", ["X"], ["Y"])], [helper.make_opsetid("", 17)])
    yield "function", helper.make_graph([helper.make_node("MyRelu", ["x"], ["y"], domain="local")],
                                        "fn", [x], [y]), [f]


@pytest.mark.parametrize("name,graph,functions", list(_models()), ids=[m[0] for m in _models()])
def test_onnx_roundtrip(ge, tmp_path, name, graph, functions):
    opsets = [helper.make_opsetid("", 17)] + [helper.make_opsetid("local", 1)] * bool(functions)
    model = helper.make_model(graph, opset_imports=opsets, functions=functions)
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    g = ge.Graph.from_bytes(model.SerializeToString())
    p1, p2 = tmp_path / "a.onnx", tmp_path / "b.onnx"
    g.save(p1)
    saved = onnx.load(str(p1))
    onnx.checker.check_model(saved, full_check=True)
    assert [(n.op_type, n.input, n.output, n.attribute) for n in saved.graph.node] == \
           [(n.op_type, n.input, n.output, n.attribute) for n in model.graph.node]
    want = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    got = {t.name: numpy_helper.to_array(t) for t in saved.graph.initializer}
    assert want.keys() == got.keys()
    for k in want:
        np.testing.assert_array_equal(want[k], got[k])
    assert [(v.name, v.type) for v in saved.graph.input] == \
           [(v.name, v.type) for v in model.graph.input]
    assert [(v.name, v.type) for v in saved.graph.output] == \
           [(v.name, v.type) for v in model.graph.output]
    assert len(saved.functions) == len(functions)
    ge.Graph.load(str(p1)).save(p2)
    assert p1.read_bytes() == p2.read_bytes()
