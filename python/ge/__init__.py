"""ge — a graph compiler and executor for deep-learning models (Python bindings).

    sess = ge.InferenceSession("model.onnx", threads=2, precision="fp32")
    outs = sess.run(None, {"x": array})

    ge.initialize({"ge.graphRunMode": "1"})
    with ge.Session() as s:
        s.add_graph(1, ge.Graph.load("model.onnx"))
        outs = s.run_graph(1, [array])
        fut = s.run_graph_async(1, [array])   # concurrent.futures.Future
    ge.finalize()

    ge.onnx_backend                             # an onnx.backend.base.Backend

The shared library is loaded from $GE_LIBRARY, else python/ge/libge.so, else <repo>/build/libge.so.
"""

import os as _os

# oneDNN's OpenMP threads spin after every kernel, by default for milliseconds, keeping cores
# busy between runs; the bound is read when the OpenMP runtime loads, i.e. with libge below.
# Unless the user chose a policy, spin briefly (idle threads stay ready for 0.2-0.3 ms,
# docs/options.md), then sleep; the `ge` command sets the same (tools/ge/main.c).
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "20000")

from ._lib import (CallbackError, GeError, InternalError, InvalidArgument, NotFound,
                   OutOfMemory, ParseError, ShapeError, StateError, Unsupported, bfloat16,
                   library_path)
from ._lib import IOError_ as IOError  # noqa: A001 - ge.IOError, a GeError subclass
from .session import (Graph, InferenceSession, Session, ValueInfo, finalize, initialize)
from . import callbacks as _callbacks  # noqa: F401,E402 - variables, callbacks, stats on Session
from .callbacks import CheckpointWriter, SummaryWriter  # noqa: E402


def version():
    """The library's version string ("0.1.0")."""
    from . import _lib
    v = _lib.ge_version()
    return v.decode() if v else ""


__version__ = "0.1.0"


def __getattr__(name):
    # `ge.onnx_backend` imports onnx lazily: the rest of the package works without onnx.
    if name == "onnx_backend":
        from .backend import GeBackend
        globals()["onnx_backend"] = GeBackend
        return GeBackend
    if name == "backend":
        import importlib
        return importlib.import_module(".backend", __name__)
    raise AttributeError("module 'ge' has no attribute %r" % name)


__all__ = ["GeError", "InvalidArgument", "NotFound", "Unsupported", "ParseError", "ShapeError",
           "OutOfMemory", "StateError", "IOError", "CallbackError", "InternalError",
           "Graph", "InferenceSession", "Session", "ValueInfo", "initialize", "finalize",
           "onnx_backend", "bfloat16", "library_path", "version"]
