"""Control flow, sequences, optionals and model-local functions through the Python package."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h


def _run(ge, model, inputs):
    return list(ge.onnx_backend.prepare(model).run(inputs))


def test_local_function_inlined(ge):
    """A FunctionProto call with an attribute reference, nested calls and a passthrough output."""
    c = h.make_node("Constant", [], ["k"])
    ra = onnx.AttributeProto()
    ra.name, ra.ref_attr_name, ra.type = "value_float", "scale", onnx.AttributeProto.FLOAT
    c.attribute.append(ra)
    inner = h.make_function("my.dom", "Twice", ["u"], ["v"], [h.make_node("Add", ["u", "u"], ["v"])],
                            [h.make_opsetid("", 18)])
    fn = h.make_function(
        "my.dom", "AddScale", ["a", "b"], ["y", "a_out"],
        [h.make_node("Add", ["a", "b"], ["s"]), c, h.make_node("Mul", ["s", "k"], ["m"]),
         h.make_node("Twice", ["m"], ["y"], domain="my.dom")],
        [h.make_opsetid("", 18), h.make_opsetid("my.dom", 1)], attributes=["scale"])
    fn.output[1] = "a"  # an output that is an input
    g = h.make_graph([h.make_node("AddScale", ["x", "x"], ["y", "z"], domain="my.dom", scale=3.0)], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [2])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2]),
                      h.make_tensor_value_info("z", T.FLOAT, [2])])
    m = h.make_model(g, functions=[inner, fn],
                     opset_imports=[h.make_opsetid("", 18), h.make_opsetid("my.dom", 1)])
    x = np.array([1, 2], np.float32)
    y, z = _run(ge, m, [x])
    np.testing.assert_allclose(y, (x + x) * 3 * 2)
    np.testing.assert_allclose(z, x)


def test_sequence_in_out(ge):
    """Lists are sequences; a sequence output comes back as a list of arrays."""
    seq_t = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
    g = h.make_graph(
        [h.make_node("SequenceInsert", ["s", "t"], ["s2"]),
         h.make_node("SequenceLength", ["s2"], ["n"])], "g",
        [h.make_value_info("s", seq_t), h.make_tensor_value_info("t", T.FLOAT, [None])],
        [h.make_value_info("s2", seq_t), h.make_tensor_value_info("n", T.INT64, [])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    a, b = np.ones(2, np.float32), np.arange(3, dtype=np.float32)
    s2, n = _run(ge, m, [[a], b])
    assert isinstance(s2, list) and len(s2) == 2
    np.testing.assert_array_equal(s2[1], b)
    assert int(n) == 2
    s2, n = _run(ge, m, [[], b])  # an empty sequence
    assert len(s2) == 1 and int(n) == 1


def test_optional_none(ge):
    opt_t = h.make_optional_type_proto(h.make_tensor_type_proto(T.FLOAT, [2]))
    g = h.make_graph([h.make_node("OptionalHasElement", ["o"], ["has"]),
                      h.make_node("Identity", ["o"], ["o2"])], "g",
                     [h.make_value_info("o", opt_t)],
                     [h.make_tensor_value_info("has", T.BOOL, []), h.make_value_info("o2", opt_t)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    has, o2 = _run(ge, m, [None])
    assert not bool(has) and o2 is None
    x = np.array([1, 2], np.float32)
    has, o2 = _run(ge, m, [x])
    assert bool(has)
    np.testing.assert_array_equal(o2, x)


def test_loop_with_outer_value(ge):
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]),
         h.make_node("Add", ["acc", "x"], ["acc_out"]),
         h.make_node("Cast", ["i"], ["i_f"], to=T.FLOAT)], "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("acc", T.FLOAT, [2])],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [2]),
         h.make_tensor_value_info("i_f", T.FLOAT, [])])
    g = h.make_graph([h.make_node("Loop", ["M", "", "acc0"], ["acc", "its"], body=body)], "g",
                     [h.make_tensor_value_info("M", T.INT64, []),
                      h.make_tensor_value_info("x", T.FLOAT, [2]),
                      h.make_tensor_value_info("acc0", T.FLOAT, [2])],
                     [h.make_tensor_value_info("acc", T.FLOAT, [2]),
                      h.make_tensor_value_info("its", T.FLOAT, [None])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    x = np.array([1, 2], np.float32)
    acc, its = _run(ge, m, [np.array(4, np.int64), x, np.zeros(2, np.float32)])
    np.testing.assert_allclose(acc, 4 * x)
    np.testing.assert_allclose(its, [0, 1, 2, 3])
    acc, its = _run(ge, m, [np.array(0, np.int64), x, np.zeros(2, np.float32)])
    np.testing.assert_allclose(acc, [0, 0])
    assert its.shape == (0,)
