"""Session.run_graph's C path (python/ge/_gefast.c) against its ctypes path: the same results,
the same errors, the ctypes path taking what the C one leaves."""

import os

import numpy as np
import pytest
from onnx import helper

F32 = np.float32


@pytest.fixture
def lib(ge):
    from ge import _lib
    return _lib


@pytest.fixture
def fast_lib(lib):
    """ge._lib, where its C path is built (else the test is skipped)."""
    if lib.fast is None:
        pytest.skip("ge._gefast is not built")
    return lib


def _no_ctypes_inputs(monkeypatch):
    """Makes the ctypes path's input conversion fail: a run that reaches it fails the test."""
    from ge import session
    def boom(*a, **k):
        raise AssertionError("the ctypes path converted the inputs")
    monkeypatch.setattr(session, "_prepare_inputs", boom)


def test_built_extension_loads(ge, lib):
    """Where the build made _gefast.so next to the library, the package uses it (a build for
    another numpy or Python would silently fall back to ctypes)."""
    path = os.path.join(os.path.dirname(lib.library_path), "_gefast.so")
    if not os.path.exists(path) or os.environ.get("GE_PY_FAST") == "0":
        pytest.skip("no _gefast.so next to %s" % lib.library_path)
    assert lib.fast is not None, "%s exists but does not load" % path


def test_dtypes_and_outputs_same_as_ctypes(ge, fast_lib, make_model, monkeypatch):
    data = make_model(
        [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Greater", ["c", "b"], ["g"]),
         helper.make_node("Cast", ["c"], ["h"], to=10), helper.make_node("Identity", ["e"], ["e2"]),
         helper.make_node("Mul", ["x", "x"], ["x2"]), helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)],
        [("a", np.int64, [3]), ("b", np.int64, [3]), ("e", F32, [0, 4]), ("x", np.float64, [2, 2, 2])],
        [("c", np.int64, [3]), ("g", np.bool_, [3]), ("h", np.float16, [3]), ("e2", F32, [0, 4]),
         ("x2", np.float64, [2, 2, 2]), ("s", np.float64, [])])
    sess = ge.InferenceSession(data)
    feeds = {"a": np.array([1, -2, 3], np.int64), "b": np.array([10, 20, -30], np.int64),
             "e": np.zeros((0, 4), F32), "x": np.arange(8, dtype=np.float64).reshape(2, 2, 2)}
    with monkeypatch.context() as m:
        _no_ctypes_inputs(m)
        fast = sess.run(None, feeds)
    with monkeypatch.context() as m:
        m.setattr(fast_lib, "fast", None)
        slow = sess.run(None, feeds)
    assert len(fast) == len(slow) == 6
    for f, s in zip(fast, slow):
        assert type(f) is np.ndarray and f.dtype == s.dtype and f.shape == s.shape
        np.testing.assert_array_equal(f, s)
    np.testing.assert_array_equal(fast[0], feeds["a"] + feeds["b"])
    assert fast[5].shape == () and fast[5] == 28.0
    fast[4][0, 0, 0] = -1.0  # outputs are writeable and own their memory
    del sess
    assert fast[4][0, 0, 0] == -1.0 and fast[4][1, 1, 1] == 49.0


def test_string_output_converted_by_ctypes(ge, fast_lib, make_model, monkeypatch):
    """An output numpy cannot view (a string tensor) comes back through the ctypes path's
    conversion, in the same list."""
    data = make_model([helper.make_node("Cast", ["x"], ["t"], to=8), helper.make_node("Relu", ["x"], ["r"])],
                      [("x", F32, [3])], [("t", np.str_, [3]), ("r", F32, [3])])
    sess = ge.InferenceSession(data)
    x = np.array([1.5, -2.0, 0.0], F32)
    with monkeypatch.context() as m:
        _no_ctypes_inputs(m)
        t, r = sess.run(None, {"x": x})
    assert t.dtype == object and list(t) == ["1.5", "-2", "0"]
    np.testing.assert_array_equal(r, np.maximum(x, 0))


def _add_model(make_model):
    """z = x + y, float32 [2, 3]."""
    return make_model([helper.make_node("Add", ["x", "y"], ["z"])],
                      [("x", F32, [2, 3]), ("y", F32, [2, 3])], [("z", F32, [2, 3])])


def test_ctypes_path_takes_what_fast_leaves(ge, fast_lib, make_model, monkeypatch):
    """Lists, non-contiguous views and other dtypes go the ctypes path: converted, or refused
    with its message naming the input."""
    sess = ge.InferenceSession(_add_model(make_model))
    base = np.arange(24, dtype=F32).reshape(4, 6)
    x, y = base[::2, ::2], base[1::2, 1::2]
    assert not x.flags.c_contiguous
    np.testing.assert_array_equal(sess.run(None, {"x": x, "y": y})[0], x + y)
    np.testing.assert_array_equal(sess.run(None, {"x": x.tolist(), "y": y})[0], x + y)
    xs = np.ascontiguousarray(x).astype(">f4")  # float32, not in the machine's byte order
    with pytest.raises(ge.GeError, match=r"expects float32, got a numpy array of dtype >f4"):
        sess.run(None, {"x": xs, "y": y})
    with pytest.raises(ge.GeError, match=r"input 0 \('x'\) expects float32, got a numpy array of dtype float64"):
        sess.run(None, {"x": x.astype(np.float64), "y": y})


def _same_error_on_both_paths(ge, fast_lib, monkeypatch, call):
    """call() fails with the same error class and message on the C path and on ctypes."""
    errors = []
    for path in ("fast", "ctypes"):
        with monkeypatch.context() as m:
            if path == "ctypes":
                m.setattr(fast_lib, "fast", None)
            with pytest.raises(ge.GeError) as e:
                call()
            errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1], errors


def test_run_errors_same_as_ctypes(ge, fast_lib, make_model, monkeypatch):
    sess = ge.InferenceSession(_add_model(make_model))
    bad = {"x": np.zeros((4, 5), F32), "y": np.zeros((4, 5), F32)}
    _same_error_on_both_paths(ge, fast_lib, monkeypatch, lambda: sess.run(None, bad))
    z = sess.run(None, {"x": np.ones((2, 3), F32), "y": np.ones((2, 3), F32)})[0]  # the session still runs
    np.testing.assert_array_equal(z, 2 * np.ones((2, 3), F32))


def _no_ctypes_outputs(monkeypatch):
    """Makes the ctypes path's wrapping of output arrays fail as well."""
    from ge import session
    def boom(*a, **k):
        raise AssertionError("the ctypes path wrapped the output arrays")
    monkeypatch.setattr(session, "from_numpy", boom)


def test_run_into_same_as_ctypes(ge, fast_lib, make_model, monkeypatch):
    """run_graph(..., outputs=arrays) on the C path writes the same values into the caller's
    arrays as the ctypes path, scalars and empty outputs included, and returns that list."""
    data = make_model(
        [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Greater", ["c", "b"], ["g"]),
         helper.make_node("Identity", ["e"], ["e2"]), helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)],
        [("a", np.int64, [3]), ("b", np.int64, [3]), ("e", F32, [0, 4]), ("x", np.float64, [2, 2])],
        [("c", np.int64, [3]), ("g", np.bool_, [3]), ("e2", F32, [0, 4]), ("s", np.float64, [])])
    g = ge.Graph.from_bytes(data)
    ins = [np.array([1, -2, 3], np.int64), np.array([10, 20, -30], np.int64), np.zeros((0, 4), F32),
           np.arange(4, dtype=np.float64).reshape(2, 2)]
    def fresh():
        return [np.zeros(3, np.int64), np.zeros(3, np.bool_), np.zeros((0, 4), F32), np.zeros((), np.float64)]
    with ge.Session() as s:
        s.add_graph(1, g)
        g.free()
        fast = fresh()
        with monkeypatch.context() as m:
            _no_ctypes_inputs(m)
            _no_ctypes_outputs(m)
            res = s.run_graph(1, ins, outputs=fast)
        assert res is not fast and len(res) == 4 and all(r is f for r, f in zip(res, fast))
        slow = fresh()
        with monkeypatch.context() as m:
            m.setattr(fast_lib, "fast", None)
            s.run_graph(1, ins, outputs=slow)
    for f, w in zip(fast, slow):
        np.testing.assert_array_equal(f, w)
    np.testing.assert_array_equal(fast[0], [11, 18, -27])
    assert fast[3] == 6.0


def test_run_into_errors_and_fallbacks(ge, fast_lib, make_model, monkeypatch):
    """A wrong output shape or dtype fails with the same error on both paths; output arrays the
    C path leaves (byte-swapped, a subclass) go the ctypes path; the session keeps running."""
    g = ge.Graph.from_bytes(_add_model(make_model))
    x, y = np.ones((2, 3), F32), np.full((2, 3), 2.0, F32)
    with ge.Session() as s:
        s.add_graph(1, g)
        g.free()
        for bad in (np.zeros((3, 2), F32), np.zeros((2, 3), np.float64)):
            _same_error_on_both_paths(ge, fast_lib, monkeypatch,
                                      lambda: s.run_graph(1, [x, y], outputs=[bad]))
        sub = np.zeros((2, 3), F32).view(np.recarray)  # not an exact ndarray: the ctypes path
        assert s.run_graph(1, [x, y], outputs=[sub])[0] is sub
        np.testing.assert_array_equal(sub, x + y)
        with pytest.raises((ge.GeError, ValueError)):
            s.run_graph(1, [x, y], outputs=[np.zeros((2, 3), ">f4")])
        out = np.zeros((2, 3), F32)
        s.run_graph(1, [x, y], outputs=[out])
        np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("extra", [[], ["--into"]])
def test_bench_run_path_script(ge, fast_lib, extra):
    """bench/run_path.py: both paths on a reference model (run, and run_graph into preallocated
    outputs), outputs checked equal, a table row."""
    import subprocess
    import sys
    models = os.environ.get("GE_MODELS")
    if not models or not os.path.exists(os.path.join(models, "mobilenetv2.onnx")):
        pytest.skip("needs the reference models (GE_MODELS)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(root, "bench", "run_path.py"), "--models", models,
                        "--only", "mobilenetv2", "--threads", "1", "--rounds", "2", "--iters", "1"] + extra,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("mobilenetv2")]
    assert len(row) == 1 and row[0][1] == "1" and float(row[0][3]) > 0 and float(row[0][5]) > 0, r.stdout
