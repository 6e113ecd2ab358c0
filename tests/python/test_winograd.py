"""ge.exec.disableWinograd: float32 3x3 convolutions by Winograd (fast/pgemm.c's F(2x2) and
F(4x4), oneDNN's F(4x4)) by default, directly with the option set.  Both against a float64
reference: the direct sum within a few 1e-6 of the outputs' root mean square, F(4x4) within
about 1e-4 (docs/options.md)."""
import os

import numpy as np
import pytest
from onnx import numpy_helper


def _conv3x3(x, w, b):
    """float64 Conv, 3x3, pads 1, stride 1: x [N, C, H, W], w [K, C, 3, 3]."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y + b[None, :, None, None]


def _model(make_model, rng):
    """Three 3x3 convolutions at 28x28 (784 output pixels: F(4x4) in pgemm between the
    channels-last convolutions), ReLU between them."""
    from onnx import helper
    shapes = [(48, 16), (64, 48), (32, 64)]
    ws = [(rng.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32) for k, c in shapes]
    bs = [(rng.standard_normal(k) * 0.1).astype(np.float32) for k, _ in shapes]
    inits, nodes, cur = [], [], "x"
    for i, (w, b) in enumerate(zip(ws, bs)):
        inits += [numpy_helper.from_array(w, "w%d" % i), numpy_helper.from_array(b, "b%d" % i)]
        nodes.append(helper.make_node("Conv", [cur, "w%d" % i, "b%d" % i], ["c%d" % i], pads=[1, 1, 1, 1]))
        cur = "c%d" % i
        if i < 2:
            nodes.append(helper.make_node("Relu", [cur], ["r%d" % i]))
            cur = "r%d" % i
    nodes[-1].output[0] = "y"
    model = make_model(nodes, [("x", np.float32, [1, 16, 28, 28])], [("y", np.float32, [1, 32, 28, 28])], inits)
    return model, ws, bs


def _reference(x, ws, bs):
    h = x.astype(np.float64)
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = _conv3x3(h, w.astype(np.float64), b.astype(np.float64))
        if i < 2:
            h = np.maximum(h, 0)
    return h


def _has_avx512():
    """AVX-512 on the processor, and oneDNN's ISA ceiling (which sets the convolutions' layouts,
    and so whether pgemm takes them) not below it."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "ALL").upper()
    if not (cap == "ALL" or cap.startswith("AVX512") or cap.startswith("AVX10")):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def test_disable_winograd_computes_directly(ge, make_model, tmp_path):
    rng = np.random.default_rng(3)
    model, ws, bs = _model(make_model, rng)
    path = tmp_path / "convs.onnx"
    path.write_bytes(model)
    x = rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
    ref = _reference(x, ws, bs)
    rms = np.sqrt(np.mean(ref ** 2))
    errs = {}
    for off in ("0", "1"):
        s = ge.InferenceSession(str(path), threads=2, options={"ge.exec.disableWinograd": off})
        y = s.run(None, {"x": x})[0]
        errs[off] = np.abs(y - ref).max() / rms
    assert errs["1"] <= 2e-5, errs          # the direct sum
    assert errs["0"] <= 5e-4, errs          # F(4x4): about 1e-4 at most
    if _has_avx512():                        # pgemm's F(4x4) ran by default
        assert errs["0"] > errs["1"], errs


def test_disable_winograd_bad_value_names_the_option(ge, make_model, tmp_path):
    model, _, _ = _model(make_model, np.random.default_rng(0))
    path = tmp_path / "convs.onnx"
    path.write_bytes(model)
    with pytest.raises(ge.GeError, match="ge.exec.disableWinograd"):
        ge.InferenceSession(str(path), options={"ge.exec.disableWinograd": "sometimes"})
