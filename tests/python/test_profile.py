"""Profiling (ge.exec.profilingMode), node dumps (ge.exec.enableDump), `ge profile` and `ge bench`.

Environment: GE_BIN (default build/ge) for the command-line tests."""

import json
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GE_BIN = os.environ.get("GE_BIN", os.path.join(ROOT, "build", "ge"))


@pytest.fixture
def small_model(make_model, tmp_path):
    """x[2,3] -> Relu -> Mul(by a constant) -> Add(x) -> Softmax: four steps (names with a slash
    to check file-name sanitizing)."""
    from onnx import helper, numpy_helper
    from onnx import TensorProto  # noqa: F401

    w = numpy_helper.from_array(np.array([[0.5, 2.0, -1.0]], np.float32), "w")
    nodes = [helper.make_node("Relu", ["x"], ["r/1"], name="relu"),
             helper.make_node("Mul", ["r/1", "w"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "x"], ["a"], name="add"),
             helper.make_node("Softmax", ["a"], ["y"], name="softmax", axis=1)]
    data = make_model(nodes, [("x", np.float32, [2, 3])], [("y", np.float32, [2, 3])],
                      initializers=[w])
    path = tmp_path / "small.onnx"
    path.write_bytes(data)
    return str(path)


def _reference(x):
    w = np.array([[0.5, 2.0, -1.0]], np.float32)
    r = np.maximum(x, 0)
    m = r * w
    a = m + x
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return {"r_1": r, "m": m, "a": a, "y": e / e.sum(axis=1, keepdims=True)}


def _steps(events):
    return [e for e in events if e.get("ph") == "X"]


def test_trace_one_event_per_step(ge, small_model, tmp_path):
    trace = tmp_path / "trace.json"
    opts = {"ge.exec.profilingMode": "1", "ge.exec.profilingPath": str(trace),
            "ge.graphOptimizationLevel": "0"}
    s = ge.Session(opts)
    s.add_graph(1, ge.Graph.load(small_model))
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    s.run_graph(1, [x])
    # a complete document after every run
    doc = json.loads(trace.read_text())
    ev = _steps(doc["traceEvents"])
    assert [e["args"]["op"] for e in ev] == ["Relu", "Mul", "Add", "Softmax"]
    assert [e["name"] for e in ev] == ["relu", "mul", "add", "softmax"]
    for e in ev:
        assert e["tid"] == 0 and e["dur"] >= 0 and e["ts"] > 0
        assert e["args"]["shapes"] == [[2, 3]]
        # the kernel that ran it: a family name first ("fast": element-wise on AVX-512;
        # "reference": the portable kernels; "onednn ...": a primitive)
        assert e["args"]["kernel"].split(" ")[0] in ("fast", "reference", "onednn"), e["args"]
    ts = [e["ts"] for e in ev]
    assert ts == sorted(ts)
    for a, b in zip(ev, ev[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-3
    s.run_graph(1, [x])
    s.close()
    doc = json.loads(trace.read_text())
    ev = _steps(doc["traceEvents"])
    assert len(ev) == 8
    assert len({e["pid"] for e in doc["traceEvents"]}) == 1
    assert ev[4]["ts"] >= ev[3]["ts"] + ev[3]["dur"] - 1e-3


def test_trace_concurrent_runs(ge, small_model, tmp_path):
    trace = tmp_path / "trace.json"
    s = ge.Session({"ge.exec.profilingMode": "1", "ge.exec.profilingPath": str(trace),
                    "ge.graphOptimizationLevel": "0"})
    s.add_graph(1, ge.Graph.load(small_model))
    x = np.ones((2, 3), np.float32)
    futs = [s.run_graph_async(1, [x]) for _ in range(8)]
    for f in futs:
        f.result(timeout=60)
    s.close()
    ev = _steps(json.loads(trace.read_text())["traceEvents"])
    assert len(ev) == 32
    assert sorted(e["args"]["step"] for e in ev) == sorted(list(range(4)) * 8)


def test_dump_matches_outputs(ge, small_model, tmp_path):
    dump = tmp_path / "dump"
    s = ge.Session({"ge.exec.enableDump": "1", "ge.exec.dumpPath": str(dump),
                    "ge.graphOptimizationLevel": "0"})
    s.add_graph(1, ge.Graph.load(small_model))
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    out = s.run_graph(1, [x])[0]
    s.run_graph(1, [2 * x])
    s.close()
    assert sorted(os.listdir(dump)) == ["0", "1"]
    for run, xin in (("0", x), ("1", 2 * x)):
        ref = _reference(xin)
        files = sorted(os.listdir(dump / run))
        assert files == sorted(k + ".npy" for k in ref)
        for k, v in ref.items():
            got = np.load(dump / run / (k + ".npy"))
            assert got.dtype == np.float32 and got.shape == v.shape
            np.testing.assert_allclose(got, v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.load(dump / "0" / "y.npy"), out, rtol=0, atol=0)


def test_bad_profiling_path(ge, small_model, tmp_path):
    with pytest.raises(Exception):
        ge.Session({"ge.exec.profilingMode": "1",
                    "ge.exec.profilingPath": str(tmp_path / "no" / "such" / "dir" / "t.json")})


def _cli(*args):
    assert os.path.isfile(GE_BIN), "%s is missing: build it or set GE_BIN" % GE_BIN
    return subprocess.run([GE_BIN] + list(args), capture_output=True, text=True, timeout=300)


def test_cli_profile(small_model, tmp_path):
    trace = tmp_path / "t.json"
    r = _cli("profile", small_model, "-o", str(trace), "--iters", "3", "--opt-level", "0")
    assert r.returncode == 0, r.stderr
    ev = _steps(json.loads(trace.read_text())["traceEvents"])
    assert len(ev) == 12
    for op in ("Relu", "Mul", "Add", "Softmax"):
        assert op in r.stdout
    assert "total in kernels" in r.stdout
    assert r.stdout.splitlines()[1].split()[:3] == ["op", "kernel", "calls"]


def test_cli_profile_kernels(tmp_path):
    """`ge profile` names the kernel of each step: on a CNN, the stem convolution, oneDNN's
    primitives by their implementation names, and pgemm."""
    models = os.environ.get("GE_MODELS", os.path.join(ROOT, "tests", "models", "out"))
    model = os.path.join(models, "mobilenetv2.onnx")
    if not os.path.isfile(model):
        pytest.skip("%s is missing: run `make models`" % model)
    trace = tmp_path / "t.json"
    r = _cli("profile", model, "-o", str(trace), "--threads", "2")
    assert r.returncode == 0, r.stderr
    ev = _steps(json.loads(trace.read_text())["traceEvents"])
    kernels = {e["args"]["kernel"] for e in ev}
    families = {k.split(" ")[0] for k in kernels}
    assert families <= {"pgemm", "stem", "onednn", "fast", "reference"}, kernels
    if "avx512f" in open("/proc/cpuinfo").read():  # the fast kernels' processor
        stem = [e for e in ev if e["args"]["kernel"] == "stem"]
        assert len(stem) == 1 and stem[0]["args"]["shapes"] == [[1, 32, 112, 112]], stem
        assert any(k.startswith("onednn ") and ":" in k for k in kernels), kernels  # "brgconv_1x1:avx512_core"
        assert "pgemm" in families, kernels
    assert "stem" in r.stdout or "avx512f" not in open("/proc/cpuinfo").read()


def test_cli_bench(small_model):
    r = _cli("bench", small_model, "--iters", "20", "--threads", "1")
    assert r.returncode == 0, r.stderr
    for word in ("p50", "p90", "p99", "throughput", "peak RSS"):
        assert word in r.stdout
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("latency:")][0]
    vals = [float(tok) for tok in line.replace(",", " ").split() if tok.replace(".", "").isdigit()]
    assert vals[0] <= vals[1] <= vals[2]
