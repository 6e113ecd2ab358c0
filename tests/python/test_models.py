"""The five reference architectures, end to end, against onnxruntime.

Environment:
  GE_MODELS  folder made by `make models` (scripts/gen_models.sh); default tests/models/out
  GE_BIN     the `ge` command-line tool; default build/ge.  The C example is looked for beside
             it as example_run_model (override with GE_EXAMPLE_RUN_MODEL).

For each model, onnxruntime (CPUExecutionProvider, 2 threads) on the saved inputs is the
reference; three ways of running ge must match it at rtol=1e-3, atol=1e-4:
  (a) the Python package: ge.InferenceSession(path).run(None, feeds)
  (b) the C example build/example_run_model writing .npy outputs
  (c) the CLI: ge run MODEL --input NAME=FILE.npy ... --output-dir DIR
The tests skip only when the model folder is missing; a missing model file or binary fails.
"""
import functools
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.environ.get("GE_MODELS", os.path.join(ROOT, "tests", "models", "out"))
GE_BIN = os.environ.get("GE_BIN", os.path.join(ROOT, "build", "ge"))
RUN_MODEL = os.environ.get("GE_EXAMPLE_RUN_MODEL",
                           os.path.join(os.path.dirname(GE_BIN), "example_run_model"))
MODELS = ["resnet50", "mobilenetv2", "googlenet", "bert_base", "gpt2"]
RTOL, ATOL = 1e-3, 1e-4
TIMEOUT = 900

pytestmark = pytest.mark.skipif(
    not os.path.isdir(MODELS_DIR),
    reason="model folder %s is missing: run `make models` (or set GE_MODELS)" % MODELS_DIR)


def model_path(name):
    path = os.path.join(MODELS_DIR, name + ".onnx")
    assert os.path.isfile(path), "%s is missing: run `make models`" % path
    return path


def input_files(name):
    """{input_name: path of its .npy file}, in the model's input order."""
    import onnx
    m = onnx.load(model_path(name), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    files = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        path = os.path.join(MODELS_DIR, name + ".inputs", vi.name + ".npy")
        assert os.path.isfile(path), "%s is missing: run `make models`" % path
        files[vi.name] = path
    return files


def feeds_of(name):
    return {k: np.load(p) for k, p in input_files(name).items()}


def ort_run(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


@functools.lru_cache(maxsize=None)
def reference(name):
    return ort_run(model_path(name), feeds_of(name))


def compare(name, how, got):
    ref = reference(name)
    assert set(got) == set(ref), "%s via %s: outputs %s, onnxruntime has %s" % (
        name, how, sorted(got), sorted(ref))
    for k, want in ref.items():
        have = got[k]
        assert have.shape == want.shape, "%s via %s: output %s has shape %s, expected %s" % (
            name, how, k, have.shape, want.shape)
        assert have.dtype == want.dtype, "%s via %s: output %s has dtype %s, expected %s" % (
            name, how, k, have.dtype, want.dtype)
        np.testing.assert_allclose(have, want, rtol=RTOL, atol=ATOL,
                                   err_msg="%s via %s: output %s" % (name, how, k))


def run_cmd(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == 0, "%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout[-4000:])
    return p.stdout


def read_outputs(out_dir, names):
    got = {}
    for k in names:
        path = os.path.join(out_dir, k + ".npy")
        assert os.path.isfile(path), "%s was not written" % path
        got[k] = np.load(path)
    return got


@pytest.mark.parametrize("name", MODELS)
def test_python_inference_session(name):
    import ge
    sess = ge.InferenceSession(model_path(name), threads=2)
    feeds = feeds_of(name)
    outs = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    assert len(outs) == len(names)
    compare(name, "ge.InferenceSession", dict(zip(names, [np.asarray(o) for o in outs])))


@pytest.mark.parametrize("name", MODELS)
def test_c_example_run_model(name, tmp_path):
    assert os.path.isfile(RUN_MODEL), "%s is missing: build it (make build)" % RUN_MODEL
    files = input_files(name)
    out_dir = str(tmp_path / "out")
    run_cmd([RUN_MODEL, model_path(name), out_dir, "--threads", "2"]
            + ["%s=%s" % kv for kv in files.items()])
    compare(name, "example_run_model", read_outputs(out_dir, reference(name).keys()))


@pytest.mark.parametrize("name", MODELS)
def test_cli_ge_run(name, tmp_path):
    assert os.path.isfile(GE_BIN), "%s is missing: build it (make build) or set GE_BIN" % GE_BIN
    files = input_files(name)
    out_dir = str(tmp_path / "out")
    cmd = [GE_BIN, "run", model_path(name), "--output-dir", out_dir]
    for kv in files.items():
        cmd += ["--input", "%s=%s" % kv]
    run_cmd(cmd)
    compare(name, "ge run", read_outputs(out_dir, reference(name).keys()))


def test_dynamic_batch_2():
    """mobilenetv2 was exported with a dynamic batch: run it at batch 2."""
    import ge
    name = "mobilenetv2"
    path = model_path(name)
    (in_name, x), = feeds_of(name).items()
    x2 = np.concatenate([x, np.ascontiguousarray(x[:, :, ::-1, :]) * 0.5], axis=0)
    assert x2.shape[0] == 2
    want = ort_run(path, {in_name: x2})
    sess = ge.InferenceSession(path, threads=2)
    outs = sess.run(None, {in_name: x2})
    names = [o.name for o in sess.get_outputs()]
    got = dict(zip(names, outs))
    assert set(got) == set(want)
    for k in want:
        assert got[k].shape == want[k].shape
        np.testing.assert_allclose(got[k], want[k], rtol=RTOL, atol=ATOL,
                                   err_msg="%s at batch 2: output %s" % (name, k))
    # the two rows differ, so a batch-1 plan reused for batch 2 would show
    assert not np.allclose(want[k][0], want[k][1])
