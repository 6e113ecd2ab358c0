"""Shared pytest fixtures.  The package is imported from <repo>/python (the Makefile also sets
PYTHONPATH), the library from $GE_LIBRARY or else <repo>/build/libge.so."""

import os
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(_REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(_REPO, "python"))


@pytest.fixture(scope="session")
def ge():
    """The ge package (skips when the shared library is not built)."""
    try:
        import ge as mod
    except ImportError as e:
        pytest.skip("ge is not importable: %s" % e)
    return mod


@pytest.fixture
def make_model():
    """make_model(nodes, inputs, outputs, initializers=(), opset=17) -> ModelProto bytes.
    inputs/outputs: [(name, numpy dtype, shape)] (shape None: unknown)."""
    import numpy as np
    from onnx import TensorProto, helper

    def vi(name, dtype, shape):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if dtype is not None \
            else TensorProto.UNDEFINED
        return helper.make_tensor_value_info(name, elem, shape)

    def build(nodes, inputs, outputs, initializers=(), opset=17, name="test"):
        graph = helper.make_graph(list(nodes), name, [vi(*i) for i in inputs],
                                  [vi(*o) for o in outputs], initializer=list(initializers))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        return model.SerializeToString()

    return build
