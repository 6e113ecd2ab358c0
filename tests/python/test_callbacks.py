"""Python side of the callback mechanism: register_callback with Python callables (GIL held by
ctypes), exceptions counted as failures, add_callback priorities, callback_stats, variables,
safetensors checkpoints read back with the `safetensors` package, async mode drained on close,
and the C example program."""

import os
import subprocess
import threading

import numpy as np
import pytest

TRAIN = {"ge.graphRunMode": "1"}


@pytest.fixture
def gem(ge):
    import ge.callbacks  # noqa: F401 - attaches the methods (also imported by ge itself)
    ge.initialize()
    yield ge


def make_graph(ge):
    g = ge.Graph("cb")
    g.add_input("x", np.float32, [2])
    g.add_variable("w", np.array([1, 2], np.float32))
    g.add_variable("step", np.zeros([1], np.float32))
    g.add_constant("one", np.ones([1], np.float32))
    g.add_node("Mul", ["x", "w"], ["y"], name="mul")
    g.add_node("ai.ge::AssignAdd", ["step", "one"], ["step_new"], name="inc")
    g.add_node("ai.ge::Summary", ["step_new"], [], name="s_step", tag="step", type="scalar")
    g.add_node("ai.ge::Summary", ["y"], [], name="y", type="histogram")
    g.add_node("ai.ge::Save", ["w", "step"], [], name="save")
    g.add_node("ai.ge::Callback", ["x", "y"], [], name="cbk", key="custom")
    g.add_output("y")
    return g


def session(ge, opts=TRAIN):
    s = ge.Session(dict(opts))
    g = make_graph(ge)
    s.add_graph(1, g)
    g.free()
    return s


X = np.array([3, 4], np.float32)


def test_summary_save_and_custom(gem):
    s = session(gem)
    got = {}
    s.register_callback("Summary", lambda gid, m: got.setdefault("summary", []).append((gid, m)))
    s.register_callback("Save", lambda gid, m: got.setdefault("save", []).append(m))
    s.register_callback("custom", lambda gid, m: got.setdefault("custom", []).append(m))
    for _ in range(3):
        (y,) = s.run_graph(1, [X])
        np.testing.assert_array_equal(y, X * np.array([1, 2], np.float32))
    assert [m["step"][0] for _, m in got["summary"]] == [1, 2, 3]
    assert got["summary"][0][0] == 1
    np.testing.assert_array_equal(got["summary"][0][1]["y"], [3, 8])
    assert got["save"][-1]["step"][0] == 3
    assert sorted(got["custom"][0]) == ["x", "y"]
    st = s.callback_stats("Summary")
    assert st["calls"] == 3 and st["failures"] == 0 and st["bytes"] == 3 * (4 + 8)
    assert set(s.callback_stats()) == {"Summary", "Save", "custom"}
    s.close()


def test_exception_is_a_failure_and_run_goes_on(gem, capfd):
    s = session(gem)
    calls = []

    def bad(gid, m):
        raise ValueError("boom in a callback")

    s.add_callback("Summary", bad, priority=0)
    s.add_callback("Summary", lambda gid, m: calls.append("after"), priority=1)
    s.add_callback("Summary", lambda gid, m: calls.append("first"), priority=-1)
    (y,) = s.run_graph(1, [X])
    np.testing.assert_array_equal(y, [3, 8])
    assert calls == ["first", "after"]
    st = s.callback_stats("Summary")
    assert st["calls"] == 3 and st["failures"] == 1
    err = capfd.readouterr().err
    assert "boom in a callback" in err and "Traceback" in err
    s.close()


def test_return_code_failure(gem):
    s = session(gem)
    s.register_callback("Save", lambda gid, m: 5)
    s.run_graph(1, [X])
    assert s.callback_stats("Save")["failures"] == 1
    s.close()


def test_registration_errors(gem):
    s = session(gem)
    with pytest.raises(gem.InvalidArgument):
        s.register_callback("", lambda g, m: 0)
    with pytest.raises(gem.GeError):
        s.register_callback("Summary", None)
    s.close()


def test_variables_get_set_restore(gem, tmp_path):
    pytest.importorskip("safetensors")
    from safetensors.numpy import load_file, save_file
    s = session(gem)
    s.run_graph(1, [X])
    v = s.get_variables(["w", "step"])
    np.testing.assert_array_equal(v["w"], [1, 2])
    assert v["step"][0] == 1
    s.set_variables({"w": np.array([5, 6], np.float32)})
    (y,) = s.run_graph(1, [X])
    np.testing.assert_array_equal(y, [15, 24])
    with pytest.raises(gem.GeError):
        s.set_variables({"w": np.zeros([3], np.float32)})
    # a checkpoint written by the safetensors package restores into the session
    path = str(tmp_path / "resume.safetensors")
    save_file({"w": np.array([7, 8], np.float32), "step": np.array([100], np.float32)}, path)
    s.restore_variables(path)
    assert s.get_variables("step")["step"][0] == 100
    s.close()
    # another session does not see these values
    s2 = session(gem)
    assert s2.get_variables("step")["step"][0] == 0
    s2.close()
    assert load_file(path)["step"][0] == 100


def test_async_mode_drains_on_close(gem):
    s = session(gem, {"ge.graphRunMode": "1", "ge.callbackMode": "async"})
    seen = []
    main = threading.get_ident()
    threads = set()

    def slow(gid, m):
        import time
        time.sleep(0.01)
        threads.add(threading.get_ident())
        seen.append(float(m["step"][0]))

    s.register_callback("Summary", slow)
    for _ in range(10):
        s.run_graph(1, [X])
    s.close()  # drains: nothing is lost
    assert seen == [float(i) for i in range(1, 11)]
    assert main not in threads


def test_concurrent_runs_from_python_threads(gem):
    s = session(gem)
    count = []
    s.register_callback("Summary", lambda gid, m: count.append(1))

    def work():
        for _ in range(10):
            s.run_graph(1, [X])

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(count) == 40
    assert s.get_variables("step")["step"][0] == 40
    s.close()


def test_example_program(tmp_path):
    lib = os.environ.get("GE_LIBRARY")
    build = os.path.dirname(lib) if lib else os.path.join(
        os.path.dirname(__file__), "..", "..", "build")
    exe = os.path.join(build, "example_callbacks")
    if not os.path.exists(exe):
        pytest.skip("example_callbacks is not built")
    for extra, calls in (([], 30), (["--async", "--logdir", str(tmp_path)], 60)):
        r = subprocess.run([exe, str(tmp_path / "ck")] + extra, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert "callback Summary  calls %d failures 0" % calls in r.stdout
        assert "w = 2.97" in r.stdout
        assert "checkpoints written: 30" in r.stdout
        assert os.path.exists(str(tmp_path / "ck-latest.safetensors"))
    assert any("tfevents" in f for f in os.listdir(str(tmp_path)))


def test_cli_run_stats(gem, tmp_path):
    exe = os.environ.get("GE_BIN")
    if not exe:
        lib = os.environ.get("GE_LIBRARY")
        exe = os.path.join(os.path.dirname(lib), "ge") if lib else None
    if not exe or not os.path.exists(exe):
        pytest.skip("the ge tool is not built")
    g = gem.Graph("s")
    g.add_input("x", np.float32, [3])
    g.add_node("Relu", ["x"], ["y"], name="r")
    g.add_node("ai.ge::Summary", ["y"], [], name="sum_y", type="histogram")
    g.add_output("y")
    path = str(tmp_path / "summary.onnx")
    g.save(path)
    g.free()
    r = subprocess.run([exe, "run", path, "--stats", "--iters", "3", "-q"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "callback Summary: calls 4, failures 0" in r.stdout
    assert "bytes 48" in r.stdout


def check_framing(path):
    """Every record's length and data CRCs, checked with tensorboard's own masked_crc32c."""
    import struct
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    data = open(path, "rb").read()
    pos = n = 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        (lcrc,) = struct.unpack_from("<I", data, pos + 8)
        assert lcrc == masked_crc32c(data[pos:pos + 8])
        body = data[pos + 12:pos + 12 + length]
        (dcrc,) = struct.unpack_from("<I", data, pos + 12 + length)
        assert dcrc == masked_crc32c(body)
        pos += 16 + length
        n += 1
    assert pos == len(data) and n == 4  # file_version + 3 runs


def test_tensorboard_writer_read_by_tensorboard(gem, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator as ea
    g = gem.Graph("tb")
    g.add_input("x", np.float32, [4])
    g.add_input("img", np.uint8, [8, 6, 3])
    g.add_variable("step", np.zeros([1], np.float32))
    g.add_constant("one", np.ones([1], np.float32))
    g.add_node("ai.ge::AssignAdd", ["step", "one"], ["step_new"], name="inc")
    g.add_node("ReduceSum", ["x"], ["loss"], name="sum", keepdims=0)
    g.add_node("ai.ge::Summary", ["loss"], [], name="s_loss", tag="loss", type="scalar")
    g.add_node("ai.ge::Summary", ["x"], [], name="s_x", tag="weights", type="histogram")
    g.add_node("ai.ge::Summary", ["img"], [], name="s_img", tag="picture", type="image")
    g.add_output("step_new")
    s = gem.Session(dict(TRAIN))
    s.add_graph(1, g)
    g.free()
    w = gem.SummaryWriter(str(tmp_path))
    s.add_writer("Summary", w)
    img = (np.arange(8 * 6 * 3) % 256).astype(np.uint8).reshape(8, 6, 3)
    for i in range(3):
        x = np.array([i, 1, 2, 3], np.float32)
        s.run_graph(1, [x, img])
    s.close()
    assert w.path.startswith(str(tmp_path))
    check_framing(w.path)
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.IMAGES: 0, ea.HISTOGRAMS: 0,
                                                             ea.SCALARS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert "loss" in tags["scalars"] and "weights" in tags["histograms"]
    assert "picture" in tags["images"]
    sc = acc.Scalars("loss")
    assert [e.step for e in sc] == [0, 1, 2]
    assert [e.value for e in sc] == [6.0, 7.0, 8.0]
    h = acc.Histograms("weights")[-1].histogram_value
    assert h.min == 1 and h.max == 3 and h.num == 4 and h.sum == 8
    im = acc.Images("picture")[0]
    assert (im.width, im.height) == (6, 8)
    # the PNG decodes back to the pixels
    import zlib
    png = im.encoded_image_string
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    idat = png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(8, 1 + 6 * 3)
    np.testing.assert_array_equal(raw[:, 1:].reshape(8, 6, 3), img)
    w.close()


def test_checkpoint_writer_python(gem, tmp_path):
    pytest.importorskip("safetensors")
    from safetensors.numpy import load_file
    s = session(gem)
    cw = gem.CheckpointWriter(str(tmp_path / "run"))
    s.add_writer("Save", cw)
    for _ in range(2):
        s.run_graph(1, [X])
    s.close()
    assert cw.count == 2
    d = load_file(str(tmp_path / "run-latest.safetensors"))
    assert d["step"][0] == 2
    np.testing.assert_array_equal(d["w"], [1, 2])


def test_missing_summary_callback_warns_once_per_graph(gem, capfd):
    s = session(gem)
    g = make_graph(gem)
    s.add_graph(2, g)
    g.free()
    s.register_callback("Save", lambda gid, m: 0)
    s.register_callback("custom", lambda gid, m: 0)
    capfd.readouterr()
    for _ in range(3):
        s.run_graph(1, [X])
        s.run_graph(2, [X])
    err = capfd.readouterr().err
    assert err.count("no 'Summary' callback") == 2  # once for graph 1, once for graph 2
    assert "graph 1 holds Summary ops" in err and "graph 2 holds Summary ops" in err
    s.close()
