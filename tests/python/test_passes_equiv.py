"""Semantic equivalence of the optimisation passes on the five reference architectures.

For each model, on random inputs (floats from a fixed-seed normal distribution; integer inputs
drawn in the range of the model's saved inputs, so token ids and masks stay valid), the outputs
of ge at ge.graphOptimizationLevel=0 (no passes) and 3 (every pass) must agree, and both must
agree with onnxruntime.

Environment: GE_MODELS (default tests/models/out).
"""
import os
import zlib

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.environ.get("GE_MODELS", os.path.join(ROOT, "tests", "models", "out"))
MODELS = ["resnet50", "mobilenetv2", "googlenet", "bert_base", "gpt2"]
RTOL, ATOL = 1e-3, 1e-4

pytestmark = pytest.mark.skipif(
    not os.path.isdir(MODELS_DIR),
    reason="model folder %s is missing: run `make models` (or set GE_MODELS)" % MODELS_DIR)


def random_feeds(name, seed):
    """Inputs with the saved inputs' shapes and dtypes and fresh random values."""
    import onnx
    path = os.path.join(MODELS_DIR, name + ".onnx")
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        saved = np.load(os.path.join(MODELS_DIR, name + ".inputs", vi.name + ".npy"))
        if np.issubdtype(saved.dtype, np.floating):
            feeds[vi.name] = rng.standard_normal(saved.shape).astype(saved.dtype)
        elif saved.dtype == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, saved.shape).astype(np.bool_)
        else:
            lo, hi = int(saved.min()), int(saved.max())
            if lo == hi:  # a constant input (e.g. an all-ones mask): keep it
                feeds[vi.name] = saved.copy()
            else:
                feeds[vi.name] = rng.integers(lo, hi + 1, saved.shape).astype(saved.dtype)
    return path, feeds


def ge_run(ge, path, feeds, level):
    sess = ge.InferenceSession(path, threads=2,
                               options={"ge.graphOptimizationLevel": str(level)})
    return sess.run(None, feeds)


@pytest.mark.parametrize("name", MODELS)
def test_level0_vs_level3(ge, name):
    import onnxruntime as ort
    path, feeds = random_feeds(name, seed=zlib.crc32(name.encode()) % 1000 + 5)
    assert os.path.isfile(path)
    out0 = ge_run(ge, path, feeds, 0)
    out3 = ge_run(ge, path, feeds, 3)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(out0) == len(out3) == len(ref)
    for i, (a, b, r) in enumerate(zip(out0, out3, ref)):
        assert a.shape == b.shape == r.shape, (i, a.shape, b.shape, r.shape)
        assert np.all(np.isfinite(b)), "%s output %d: level 3 has non-finite values" % (name, i)
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL,
                                   err_msg="%s output %d: level 3 vs level 0" % (name, i))
        np.testing.assert_allclose(a, r, rtol=RTOL, atol=ATOL,
                                   err_msg="%s output %d: level 0 vs onnxruntime" % (name, i))
        np.testing.assert_allclose(b, r, rtol=RTOL, atol=ATOL,
                                   err_msg="%s output %d: level 3 vs onnxruntime" % (name, i))
