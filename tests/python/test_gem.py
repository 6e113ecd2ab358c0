"""`ge compile` and the .gem offline model, through the command-line tool.

For resnet50 and bert_base (from $GE_MODELS, default tests/models/out): compile to .gem (with
and without static input shapes), `ge run` the .gem and the .onnx on the saved inputs and
compare; `ge inspect` reads a .gem; a truncated or corrupt .gem is a clean GE_ERR_PARSE naming
the file.  GE_BIN: the `ge` tool (default build/ge)."""
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.environ.get("GE_MODELS", os.path.join(ROOT, "tests", "models", "out"))
GE_BIN = os.environ.get("GE_BIN", os.path.join(ROOT, "build", "ge"))
TIMEOUT = 900

pytestmark = pytest.mark.skipif(
    not os.path.isdir(MODELS_DIR),
    reason="model folder %s is missing: run `make models` (or set GE_MODELS)" % MODELS_DIR)


def ge(*args, ok=True):
    p = subprocess.run([GE_BIN] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    if ok:
        assert p.returncode == 0, "ge %s failed (%d):\n%s\n%s" % (
            " ".join(map(str, args)), p.returncode, p.stdout, p.stderr)
    return p


def model_path(name):
    path = os.path.join(MODELS_DIR, name + ".onnx")
    assert os.path.isfile(path), "%s is missing: run `make models`" % path
    return path


def inputs_of(name):
    d = os.path.join(MODELS_DIR, name + ".inputs")
    assert os.path.isdir(d), "%s is missing: run `make models`" % d
    return {f[:-4]: os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".npy")}


def run_outputs(model, inputs, out_dir):
    args = ["run", model, "--output-dir", out_dir, "--quiet"]
    for k, p in inputs.items():
        args += ["--input", "%s=%s" % (k, p)]
    ge(*args)
    return {f[:-4]: np.load(os.path.join(out_dir, f))
            for f in sorted(os.listdir(out_dir)) if f.endswith(".npy")}


@pytest.fixture(scope="module", params=["resnet50", "bert_base"])
def compiled(request, tmp_path_factory):
    name = request.param
    tmp = tmp_path_factory.mktemp(name)
    inputs = inputs_of(name)
    shapes = []
    for k, p in inputs.items():
        shapes += ["--input-shape", "%s:%s" % (k, ",".join(map(str, np.load(p).shape)))]
    gem = tmp / (name + ".gem")
    p = ge("compile", model_path(name), "-o", gem, "--verbose", *shapes)
    assert "passes:" in p.stdout and "memory plan:" in p.stdout, p.stdout
    gem_dyn = tmp / (name + "_dyn.gem")
    ge("compile", model_path(name), "-o", gem_dyn, "--quiet")
    ref = run_outputs(model_path(name), inputs, tmp / "onnx_out")
    return name, inputs, gem, gem_dyn, ref, tmp


def test_run_gem_matches_onnx(compiled):
    name, inputs, gem, gem_dyn, ref, tmp = compiled
    with open(gem, "rb") as f:
        assert f.read(4) == b"GEM1"
    for tag, path in (("static", gem), ("dynamic", gem_dyn)):
        got = run_outputs(path, inputs, tmp / ("gem_out_" + tag))
        assert set(got) == set(ref)
        for k in ref:
            assert got[k].shape == ref[k].shape and got[k].dtype == ref[k].dtype
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-4, atol=1e-5,
                                       err_msg="%s %s .gem output %s" % (name, tag, k))


def test_inspect_gem(compiled):
    name, inputs, gem, _, _, _ = compiled
    p = ge("inspect", gem)
    assert "inputs:" in p.stdout and "ops:" in p.stdout
    # the baked static shapes are the inputs' declared types
    for k, path in inputs.items():
        dims = ",".join(map(str, np.load(path).shape))
        assert any(k in line and "[%s]" % dims in line for line in p.stdout.splitlines()), p.stdout
    # fused ops of the passes are in the saved graph
    assert "ai.ge::" in p.stdout


def test_corrupt_gem(compiled):
    name, inputs, gem, _, _, tmp = compiled
    data = open(gem, "rb").read()
    cases = {
        "truncated": data[: len(data) // 2],
        "header_only": data[:20],
        "flipped": data[:-100] + bytes([data[-100] ^ 0x55]) + data[-99:],
        "version": data[:4] + b"\x63\x00\x00\x00" + data[8:],
        "magic": b"GEM9" + data[4:64],
    }
    for tag, blob in cases.items():
        path = tmp / ("bad_%s.gem" % tag)
        path.write_bytes(blob)
        for cmd in ("run", "inspect"):
            p = ge(cmd, path, ok=False)
            assert p.returncode == 1, (tag, cmd, p.returncode, p.stderr)
            assert "GE_ERR_PARSE" in p.stderr and str(path) in p.stderr, (tag, cmd, p.stderr)
            assert "Traceback" not in p.stderr and "Segmentation" not in p.stderr


def test_compile_errors(tmp_path):
    p = ge("compile", model_path("resnet50"), "--quiet", ok=False)
    assert p.returncode == 2 and "-o" in p.stderr
    p = ge("compile", model_path("resnet50"), "-o", tmp_path / "x.gem", "--precision", "fp8",
           ok=False)
    assert p.returncode == 2 and "fp8" in p.stderr
    p = ge("compile", model_path("resnet50"), "-o", tmp_path / "x.gem", "--input-shape",
           "nope:1,2", ok=False)
    assert p.returncode != 0 and "nope" in p.stderr


def test_precision_recorded(tmp_path):
    """--precision is baked into the .gem (header and the precision pass's node marks); running
    it gives what a session with that precision mode gives on the fp32 .gem."""
    inputs = inputs_of("resnet50")
    bf = tmp_path / "bf16.gem"
    ge("compile", model_path("resnet50"), "-o", bf, "--precision", "mixed_bf16", "--quiet")
    assert b"precision=allow_mix_precision_bf16\n" in open(bf, "rb").read(512)
    fp = tmp_path / "fp32.gem"
    ge("compile", model_path("resnet50"), "-o", fp, "--quiet")
    got = run_outputs(bf, inputs, tmp_path / "bf")
    args = ["run", fp, "--output-dir", tmp_path / "ov", "--quiet",
            "--option", "ge.exec.precision_mode=allow_mix_precision_bf16"]
    for k, p in inputs.items():
        args += ["--input", "%s=%s" % (k, p)]
    ge(*args)
    over = np.load(tmp_path / "ov" / "output.npy")
    np.testing.assert_array_equal(got["output"], over)
    ref = run_outputs(model_path("resnet50"), inputs, tmp_path / "ref")["output"]
    np.testing.assert_allclose(got["output"], ref, atol=0.5)
    # --precision is every command's option, not compile's alone: `ge run --precision
    # mixed_bf16` on the fp32 .gem is the --option form above
    args = ["run", fp, "--output-dir", tmp_path / "short", "--quiet", "--precision", "mixed_bf16"]
    for k, p in inputs.items():
        args += ["--input", "%s=%s" % (k, p)]
    ge(*args)
    np.testing.assert_array_equal(np.load(tmp_path / "short" / "output.npy"), over)
    assert not np.array_equal(over, ref)  # the mode took effect


@pytest.mark.parametrize("cmd", ["run", "bench", "profile", "inspect"])
def test_precision_flag_errors(tmp_path, cmd):
    """A bad --precision is refused by every command, naming the value, before any work."""
    args = [cmd, model_path("resnet50"), "--precision", "fp8"]
    if cmd == "profile":
        args += ["-o", tmp_path / "t.json"]
    p = ge(*args, ok=False)
    assert p.returncode == 2 and "--precision" in p.stderr and "'fp8'" in p.stderr, p.stderr
