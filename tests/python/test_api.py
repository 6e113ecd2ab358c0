"""The Python API on small graphs: InferenceSession, Graph builder, Session, onnx_backend."""

import concurrent.futures
import ctypes
import gc
import threading

import numpy as np
import pytest
from onnx import helper, numpy_helper

F32 = np.float32


@pytest.fixture(autouse=True, params=["fast", "ctypes"])
def run_path(request, ge, monkeypatch):
    """Every test here runs on both of Session.run_graph's paths: the C one (ge._gefast, where
    it was built) and ctypes."""
    from ge import _lib
    if request.param == "fast" and _lib.fast is None:
        pytest.skip("ge._gefast is not built")
    if request.param == "ctypes":
        monkeypatch.setattr(_lib, "fast", None)
    return request.param


@pytest.fixture
def add_relu(make_model):
    """z = Relu(x + y), x, y: float32 [2, 3]."""
    return make_model(
        [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["z"])],
        [("x", F32, [2, 3]), ("y", F32, [2, 3])], [("z", F32, [2, 3])])


@pytest.fixture
def matmul_model(make_model):
    """y = x @ W + b with W, b initializers; x: float32 ["N", 4] (symbolic batch)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 5)).astype(F32)
    b = rng.standard_normal((5,)).astype(F32)
    data = make_model(
        [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])],
        [("x", F32, ["N", 4])], [("y", F32, ["N", 5])],
        initializers=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    return data, w, b


def _xy(seed=0, shape=(2, 3)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(F32), rng.standard_normal(shape).astype(F32)


# --------------------------------------------------------------------- InferenceSession


def test_inference_session_add_relu(ge, add_relu):
    sess = ge.InferenceSession(add_relu)
    x, y = _xy()
    (z,) = sess.run(None, {"x": x, "y": y})
    assert z.dtype == F32 and z.shape == (2, 3)
    np.testing.assert_allclose(z, np.maximum(x + y, 0), rtol=1e-6)
    # by output name
    (z2,) = sess.run(["z"], {"x": x, "y": y})
    np.testing.assert_allclose(z2, z)


def test_inference_session_from_path_and_options(ge, add_relu, tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(add_relu)
    sess = ge.InferenceSession(str(p), threads=2, precision="fp32")
    x, y = _xy(1)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": y})[0], np.maximum(x + y, 0),
                               rtol=1e-6)


def test_matmul_symbolic_batch(ge, matmul_model):
    data, w, b = matmul_model
    sess = ge.InferenceSession(data)
    for n in (1, 3, 7):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(F32)
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(y, x @ w + b, rtol=1e-5, atol=1e-5)


def test_get_inputs_outputs(ge, add_relu, matmul_model):
    sess = ge.InferenceSession(add_relu)
    ins, outs = sess.get_inputs(), sess.get_outputs()
    assert [i.name for i in ins] == ["x", "y"]
    assert [o.name for o in outs] == ["z"]
    assert ins[0].shape == [2, 3] and ins[0].type == "tensor(float)"
    assert outs[0].type == "tensor(float)"
    sess2 = ge.InferenceSession(matmul_model[0])
    (x,) = sess2.get_inputs()
    assert x.shape == ["N", 4]


def test_non_contiguous_and_list_inputs(ge, add_relu):
    sess = ge.InferenceSession(add_relu)
    big = np.arange(24, dtype=F32).reshape(4, 6) - 10
    x = big[::2, ::2]             # non-contiguous view
    y = big[1::2, 1::2].T.T        # still a view
    assert not x.flags.c_contiguous
    (z,) = sess.run(None, {"x": x, "y": y})
    np.testing.assert_allclose(z, np.maximum(x + y, 0))
    (z,) = sess.run(None, {"x": x.tolist(), "y": y})   # lists are converted to the input dtype
    np.testing.assert_allclose(z, np.maximum(x + y, 0))


def test_zero_copy_input_and_output_lifetime(ge, make_model):
    """A contiguous float32 input is not copied by the package; outputs are numpy arrays whose
    base owns the C tensor, and stay valid after the session is gone."""
    from ge import _tensor
    x = np.arange(6, dtype=F32).reshape(2, 3)
    t = _tensor.from_numpy(x)
    from ge import _lib
    assert _lib.ge_tensor_data(t.ptr) == x.ctypes.data       # wrapped, not copied
    t.free()
    data = make_model([helper.make_node("Identity", ["x"], ["y"])],
                      [("x", F32, [2, 3])], [("y", F32, [2, 3])])
    sess = ge.InferenceSession(data)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, x)
    assert y.base is not None
    del sess
    gc.collect()
    np.testing.assert_array_equal(y, x)   # the output owns its memory


def test_dtypes_int64_bool(ge, make_model):
    data = make_model([helper.make_node("Add", ["a", "b"], ["c"]),
                       helper.make_node("Greater", ["c", "b"], ["g"])],
                      [("a", np.int64, [3]), ("b", np.int64, [3])],
                      [("c", np.int64, [3]), ("g", np.bool_, [3])])
    sess = ge.InferenceSession(data)
    a = np.array([1, -2, 3], dtype=np.int64)
    b = np.array([10, 20, -30], dtype=np.int64)
    c, g = sess.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(c, a + b)
    assert g.dtype == np.bool_
    np.testing.assert_array_equal(g, (a + b) > b)


# --------------------------------------------------------------------- errors


def test_error_bad_path(ge, tmp_path):
    missing = tmp_path / "no_such_model.onnx"
    with pytest.raises(ge.GeError) as e:
        ge.InferenceSession(str(missing))
    assert "no_such_model.onnx" in str(e.value)
    assert isinstance(e.value, RuntimeError)


def test_error_garbage_model(ge, tmp_path):
    p = tmp_path / "garbage.onnx"
    p.write_bytes(b"\x08\x07this is not a model\xff\xff\xff")
    with pytest.raises(ge.GeError):
        ge.InferenceSession(str(p))


def test_error_unknown_and_missing_input(ge, add_relu):
    sess = ge.InferenceSession(add_relu)
    x, y = _xy()
    with pytest.raises(ValueError, match="'bogus'"):
        sess.run(None, {"x": x, "y": y, "bogus": x})
    with pytest.raises(ValueError, match="missing input.*'y'"):
        sess.run(None, {"x": x})
    with pytest.raises(ValueError, match="'nope'"):
        sess.run(["nope"], {"x": x, "y": y})


def test_error_wrong_dtype(ge, add_relu):
    sess = ge.InferenceSession(add_relu)
    x, y = _xy()
    with pytest.raises(ge.GeError, match="float32"):
        sess.run(None, {"x": x.astype(np.float64), "y": y})


def test_error_wrong_shape(ge, add_relu):
    sess = ge.InferenceSession(add_relu)
    x = np.zeros((4, 5), F32)
    with pytest.raises(ge.GeError) as e:
        sess.run(None, {"x": x, "y": x})
    msg = str(e.value)
    assert "x" in msg or "4" in msg, msg


def test_error_unknown_op(ge, make_model):
    data = make_model([helper.make_node("NoSuchOpXyz", ["x"], ["y"])],
                      [("x", F32, [2])], [("y", F32, [2])])
    with pytest.raises(ge.GeError, match="NoSuchOpXyz"):
        ge.InferenceSession(data)


def test_error_bad_option(ge, add_relu):
    with pytest.raises(ge.GeError, match="ge.noSuchOption"):
        ge.InferenceSession(add_relu, options={"ge.noSuchOption": "1"})
    with pytest.raises(ValueError):
        ge.InferenceSession(add_relu, precision="fp7")


# --------------------------------------------------------------------- Graph builder


def _build_add_relu(ge):
    g = ge.Graph("built")
    g.add_input("x", np.float32, [2, 3])
    g.add_constant("c", np.array([[1, -2, 3], [-4, 5, -6]], F32))
    g.add_node("Add", ["x", "c"], ["s"], name="add0")
    g.add_node("Relu", ["s"], ["y"])
    g.add_output("y")
    return g


def test_graph_builder_run_and_introspect(ge):
    g = _build_add_relu(ge)
    assert [v.name for v in g.inputs] == ["x"]
    assert g.inputs[0].shape == [2, 3] and g.inputs[0].type == "tensor(float)"
    assert [v.name for v in g.outputs] == ["y"]
    assert g.num_nodes == 2
    x = np.ones((2, 3), F32)
    with ge.Session() as s:
        s.add_graph(1, g)
        g.free()                # the session holds its own copy
        s.build_graph(1)
        (y,) = s.run_graph(1, [x])
    np.testing.assert_allclose(y, np.maximum(x + np.array([[1, -2, 3], [-4, 5, -6]], F32), 0))


def test_run_graph_into_preallocated_outputs(ge):
    g = _build_add_relu(ge)
    c = np.array([[1, -2, 3], [-4, 5, -6]], F32)
    with ge.Session() as s:
        s.add_graph(1, g)
        g.free()
        out = np.full((2, 3), np.nan, F32)
        for k in range(3):
            x = np.full((2, 3), float(k), F32)
            res = s.run_graph(1, [x], outputs=[out])
            assert res[0] is out            # the same array, written in place
            np.testing.assert_allclose(out, np.maximum(x + c, 0))
        with pytest.raises(ge.ShapeError, match="'y'"):
            s.run_graph(1, [x], outputs=[np.zeros((3, 2), F32)])
        with pytest.raises(ge.ShapeError):
            s.run_graph(1, [x], outputs=[np.zeros((2, 3), np.float64)])
        with pytest.raises(ge.InvalidArgument):
            s.run_graph(1, [x], outputs=[np.zeros((3, 2), F32).T])    # not C-contiguous
        with pytest.raises(ge.InvalidArgument):
            s.run_graph(1, [x], outputs=[])


def test_graph_builder_attributes(ge):
    g = ge.Graph("attrs")
    g.add_input("x", "float32", [2, 3, 4])
    g.add_node("Transpose", ["x"], ["t"], perm=[2, 0, 1])
    g.add_node("LeakyRelu", ["t"], ["l"], alpha=0.5)
    g.add_node("Flatten", ["l"], ["f"], axis=1)
    g.add_output("f")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(F32)
    with ge.Session() as s:
        s.add_graph(7, g)
        (f,) = s.run_graph(7, [x])
    t = x.transpose(2, 0, 1)
    np.testing.assert_allclose(f, np.where(t > 0, t, 0.5 * t).reshape(4, 6), rtol=1e-6)


def test_attr_struct_layout(ge):
    from ge import _lib
    assert ctypes.sizeof(_lib.ge_attr) == 32
    assert _lib.ge_attr.v.offset == 16


def test_graph_save_load_round_trip(ge, tmp_path):
    g = _build_add_relu(ge)
    p = tmp_path / "built.onnx"
    g.save(str(p))
    import onnx
    m = onnx.load(str(p))
    assert [n.op_type for n in m.graph.node] == ["Add", "Relu"]
    g2 = ge.Graph.load(str(p))
    assert [v.name for v in g2.inputs] == ["x"]
    x = np.full((2, 3), 0.5, F32)
    sess = ge.InferenceSession(str(p))
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, np.maximum(x + np.array([[1, -2, 3], [-4, 5, -6]], F32), 0))


def test_graph_builder_errors(ge):
    g = ge.Graph("bad")
    g.add_input("x", np.float32, [2])
    with pytest.raises(ge.GeError):
        g.add_input("x", np.float32, [2])      # duplicate name
    with pytest.raises(TypeError):
        g.add_node("Relu", ["x"], ["y"], weird=object())
    with pytest.raises(ge.GeError):
        g.add_output("never_defined")


# --------------------------------------------------------------------- Session


def test_session_add_build_run_remove(ge, add_relu):
    x, y = _xy(3)
    with ge.Session() as s:
        s.add_graph(1, ge.Graph.from_bytes(add_relu))
        s.add_graph(2, add_relu)                     # bytes work too
        s.build_graph(1)
        (z,) = s.run_graph(1, [x, y])
        np.testing.assert_allclose(z, np.maximum(x + y, 0))
        (z,) = s.run_graph(2, [x, y])
        np.testing.assert_allclose(z, np.maximum(x + y, 0))
        s.remove_graph(1)
        with pytest.raises(ge.GeError):
            s.run_graph(1, [x, y])
        with pytest.raises(ge.GeError):
            s.remove_graph(1)
    with pytest.raises(ge.GeError):
        s.run_graph(2, [x, y])                       # closed


def test_run_graph_async_future(ge, add_relu):
    x, y = _xy(4)
    with ge.Session() as s:
        s.add_graph(5, add_relu)
        s.build_graph(5)
        futs = [s.run_graph_async(5, [x * k, y]) for k in range(1, 5)]
        for k, f in enumerate(futs, 1):
            assert isinstance(f, concurrent.futures.Future)
            (z,) = f.result(timeout=30)
            np.testing.assert_allclose(z, np.maximum(x * k + y, 0), rtol=1e-6)


def test_run_graph_async_error(ge, add_relu):
    with ge.Session() as s:
        s.add_graph(5, add_relu)
        bad = np.zeros((7, 7), F32)
        try:
            fut = s.run_graph_async(5, [bad, bad])
        except ge.GeError:
            return                                    # rejected at submission: fine too
        with pytest.raises(ge.GeError):
            fut.result(timeout=30)


def test_concurrent_runs_four_threads(ge, matmul_model):
    data, w, b = matmul_model
    sess = ge.InferenceSession(data)
    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(25):
                n = int(rng.integers(1, 9))
                x = rng.standard_normal((n, 4)).astype(F32)
                (y,) = sess.run(None, {"x": x})
                np.testing.assert_allclose(y, x @ w + b, rtol=1e-5, atol=1e-5)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_initialize_twice_same_options(ge):
    # ge.initialize with the options already in force is harmless
    try:
        ge.initialize({})
    except ge.StateError:
        pytest.skip("process already initialized with other options")
    ge.initialize({})


# --------------------------------------------------------------------- onnx backend


def test_onnx_backend_prepare_run(ge, add_relu):
    import onnx
    model = onnx.load_model_from_string(add_relu)
    assert ge.onnx_backend.supports_device("CPU")
    assert not ge.onnx_backend.supports_device("CUDA")
    rep = ge.onnx_backend.prepare(model, "CPU")
    x, y = _xy(5)
    outs = rep.run([x, y])
    assert len(outs) == 1
    np.testing.assert_allclose(outs[0], np.maximum(x + y, 0))
    outs = ge.onnx_backend.run_model(model, {"x": x, "y": y})
    np.testing.assert_allclose(outs[0], np.maximum(x + y, 0))


def test_onnx_backend_run_node(ge):
    node = helper.make_node("Relu", ["a"], ["b"])
    a = np.array([-1.0, 0.0, 2.5], F32)
    (b,) = ge.onnx_backend.run_node(node, [a])
    np.testing.assert_array_equal(b, np.maximum(a, 0))


def test_onnx_backend_errors_at_prepare(ge, make_model):
    import onnx
    data = make_model([helper.make_node("NoSuchOpXyz", ["x"], ["y"])],
                      [("x", F32, [2])], [("y", F32, [2])])
    with pytest.raises(ge.GeError, match="NoSuchOpXyz"):
        ge.onnx_backend.prepare(onnx.load_model_from_string(data))


def test_onnx_backend_test_suite_hook(ge):
    """ge.onnx_backend plugs into onnx's BackendTest."""
    import warnings

    import onnx.backend.test
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")   # onnx's case generators overflow on purpose
        bt = onnx.backend.test.BackendTest(ge.onnx_backend, __name__)
    bt.include(r"test_relu_cpu$")
    cases = bt.test_cases
    assert "OnnxBackendNodeModelTest" in cases
