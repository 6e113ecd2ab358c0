"""Low-precision dtypes through the Python package: ml_dtypes arrays in and out (float8,
float4e2m1, int4/uint4, int2/uint2), ops that move their bytes, Cast, packed ONNX
initializers, and a clear load-time error for arithmetic on them.  onnx's reference
evaluator is the oracle."""
import numpy as np
import pytest
from onnx import TensorProto as T, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

md = pytest.importorskip("ml_dtypes")

LOWP = [(T.FLOAT8E4M3FN, "float8_e4m3fn"), (T.FLOAT8E4M3FNUZ, "float8_e4m3fnuz"),
        (T.FLOAT8E5M2, "float8_e5m2"), (T.FLOAT8E5M2FNUZ, "float8_e5m2fnuz"),
        (T.FLOAT8E8M0, "float8_e8m0fnu"), (T.UINT4, "uint4"), (T.INT4, "int4"),
        (T.FLOAT4E2M1, "float4_e2m1fn"), (T.UINT2, "uint2"), (T.INT2, "int2")]
LOWP = [(code, getattr(md, name)) for code, name in LOWP if hasattr(md, name)]


def _model(nodes, inputs, outputs, inits=(), opset=25):
    g = helper.make_graph(nodes, "lowp",
                          [helper.make_tensor_value_info(n, d, s) for n, d, s in inputs],
                          [helper.make_tensor_value_info(n, d, s) for n, d, s in outputs],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 11
    return m


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (a, b)


def _values(npdt):
    v = (np.arange(24) % 5 - 2).astype(np.float32)
    if np.dtype(npdt).name.startswith("uint") or "e8m0" in np.dtype(npdt).name:
        v = np.abs(v)
    return v.reshape(2, 3, 4).astype(npdt)


@pytest.mark.parametrize("code,npdt", LOWP, ids=[T.DataType.Name(c) for c, _ in LOWP])
def test_move_ops_and_packed_initializer(ge, code, npdt):
    x = _values(npdt)
    c = numpy_helper.from_array(x[0, :, :3].copy(), "c")  # 9 elements: odd when packed
    shp = numpy_helper.from_array(np.array([4, 6], dtype=np.int64), "shp")
    idx = numpy_helper.from_array(np.array([2, 0], dtype=np.int64), "idx")
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
             helper.make_node("Reshape", ["t", "shp"], ["r"]),
             helper.make_node("Gather", ["r", "idx"], ["y0"], axis=1),
             helper.make_node("Flatten", ["c"], ["y1"], axis=0),
             helper.make_node("Concat", ["x", "x"], ["y2"], axis=1)]
    m = _model(nodes, [("x", code, [2, 3, 4])],
               [("y0", code, None), ("y1", code, None), ("y2", code, None)], [c, shp, idx])
    sess = ge.InferenceSession(m.SerializeToString())
    assert sess.get_inputs()[0].type == "tensor(%s)" % T.DataType.Name(code).lower()
    got = sess.run(None, {"x": x})
    want = ReferenceEvaluator(m).run(None, {"x": x})
    for a, b in zip(got, want):
        _same(a, b)


@pytest.mark.parametrize("code,npdt", LOWP, ids=[T.DataType.Name(c) for c, _ in LOWP])
def test_cast_roundtrip(ge, code, npdt):
    x = np.array([0.0, 0.3, -1.7, 2.5, 1e6, -7.0, 448.0, 6.0], dtype=np.float32)
    m = _model([helper.make_node("Cast", ["x"], ["q"], to=code),
                helper.make_node("Cast", ["q"], ["y"], to=T.FLOAT)],
               [("x", T.FLOAT, [8])], [("q", code, None), ("y", T.FLOAT, None)])
    got = ge.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    want = ReferenceEvaluator(m).run(None, {"x": x})
    _same(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_arithmetic_is_refused_at_load(ge):
    m = _model([helper.make_node("Add", ["x", "x"], ["y"])], [("x", T.INT4, [3])],
               [("y", T.INT4, None)])
    with pytest.raises(Exception, match="int4"):
        ge.InferenceSession(m.SerializeToString())


def test_unknown_dtype_still_fails_at_load(ge):
    m = _model([helper.make_node("Identity", ["x"], ["y"])], [("x", T.FLOAT6E2M3, [3])],
               [("y", T.FLOAT6E2M3, None)])
    with pytest.raises(Exception, match="float6e2m3"):
        ge.InferenceSession(m.SerializeToString())
