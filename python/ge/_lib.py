"""ctypes bindings of include/ge/ge.h.

The shared library is found in this order:
  1. $GE_LIBRARY, if set;
  2. libge.so next to this file (an installed package);
  3. <repo>/build/libge.so, relative to this file (a source checkout).

`fast` is the C run path (ge._gefast, built as _gefast.so next to the library when Python's
and numpy's headers were found; None without it, or with GE_PY_FAST=0): Session.run_graph
takes it for plain numpy inputs and falls back to ctypes for everything else.

Every function used by the package has its argtypes/restype declared here.  `check(status)`
turns a non-zero ge_status into the matching GeError subclass carrying ge_last_error(); it must
be called right after the failing call, on the same thread (the message is thread-local).
"""

import ctypes
import os

import numpy as np

# ----------------------------------------------------------------------------- loading

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("GE_LIBRARY")
    if env:
        return [env]
    return [os.path.join(_HERE, "libge.so"),
            os.path.normpath(os.path.join(_HERE, "..", "..", "build", "libge.so"))]


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            try:
                return ctypes.CDLL(path), path
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
        else:
            tried.append("%s (no such file)" % path)
    raise ImportError("ge: cannot load the shared library libge.so; tried: " + "; ".join(tried)
                      + ". Build it (make build) or set GE_LIBRARY to its path.")


lib, library_path = _load()

# ----------------------------------------------------------------------------- status + errors

GE_OK = 0
GE_ERR_INVALID_ARGUMENT = 1
GE_ERR_NOT_FOUND = 2
GE_ERR_UNSUPPORTED = 3
GE_ERR_PARSE = 4
GE_ERR_SHAPE = 5
GE_ERR_OUT_OF_MEMORY = 6
GE_ERR_STATE = 7
GE_ERR_IO = 8
GE_ERR_CALLBACK = 9
GE_ERR_INTERNAL = 10


class GeError(RuntimeError):
    """A failing ge call.  `.status` is the ge_status code, str(e) is ge_last_error()."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgument(GeError):
    status = GE_ERR_INVALID_ARGUMENT


class NotFound(GeError):
    status = GE_ERR_NOT_FOUND


class Unsupported(GeError):
    status = GE_ERR_UNSUPPORTED


class ParseError(GeError):
    status = GE_ERR_PARSE


class ShapeError(GeError):
    status = GE_ERR_SHAPE


class OutOfMemory(GeError, MemoryError):
    status = GE_ERR_OUT_OF_MEMORY


class StateError(GeError):
    status = GE_ERR_STATE


class IOError_(GeError):
    status = GE_ERR_IO


class CallbackError(GeError):
    status = GE_ERR_CALLBACK


class InternalError(GeError):
    status = GE_ERR_INTERNAL


_ERRORS = {c.status: c for c in (InvalidArgument, NotFound, Unsupported, ParseError, ShapeError,
                                  OutOfMemory, StateError, IOError_, CallbackError,
                                  InternalError)}

# ----------------------------------------------------------------------------- types

c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_char_pp = ctypes.POINTER(ctypes.c_char_p)


class ge_option(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _Span(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_size_t)]


class _AttrValue(ctypes.Union):
    _fields_ = [("f", ctypes.c_float), ("i", ctypes.c_int64), ("s", ctypes.c_char_p),
                ("p", ctypes.c_void_p), ("span", _Span)]


class ge_attr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("v", _AttrValue)]


GE_ATTR_KIND_UNDEFINED = 0
GE_ATTR_KIND_FLOAT = 1
GE_ATTR_KIND_INT = 2
GE_ATTR_KIND_STRING = 3
GE_ATTR_KIND_TENSOR = 4
GE_ATTR_KIND_GRAPH = 5
GE_ATTR_KIND_FLOATS = 6
GE_ATTR_KIND_INTS = 7
GE_ATTR_KIND_STRINGS = 8
GE_ATTR_KIND_TENSORS = 9
GE_ATTR_KIND_GRAPHS = 10

# Layout of ge_attr on LP64: name (8), kind (4 + 4 padding), union (16, 8-aligned) = 32.
assert ctypes.sizeof(ge_attr) == 16 + 2 * ctypes.sizeof(ctypes.c_void_p)
assert ge_attr.v.offset == 2 * ctypes.sizeof(ctypes.c_void_p)

RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
RUN_DONE_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.c_size_t, ctypes.c_void_p)

# dtypes
GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8, GE_I16, GE_I32, GE_I64, GE_U8, GE_U16, GE_U32, GE_U64, \
    GE_BOOL, GE_STRING = range(14)
# low-precision dtypes: one element per byte, as ml_dtypes stores them (see ge.h)
GE_F8E4M3FN, GE_F8E4M3FNUZ, GE_F8E5M2, GE_F8E5M2FNUZ, GE_F8E8M0, GE_U4, GE_I4, GE_F4E2M1, \
    GE_U2, GE_I2 = range(14, 24)
GE_DTYPE_COUNT = 24

try:  # bfloat16 numpy dtype, when available
    import ml_dtypes as _ml_dtypes
    bfloat16 = np.dtype(_ml_dtypes.bfloat16)
except Exception:  # pragma: no cover - optional dependency
    bfloat16 = None

_NP_OF_GE = {
    GE_F32: np.dtype(np.float32), GE_F16: np.dtype(np.float16), GE_F64: np.dtype(np.float64),
    GE_I8: np.dtype(np.int8), GE_I16: np.dtype(np.int16), GE_I32: np.dtype(np.int32),
    GE_I64: np.dtype(np.int64), GE_U8: np.dtype(np.uint8), GE_U16: np.dtype(np.uint16),
    GE_U32: np.dtype(np.uint32), GE_U64: np.dtype(np.uint64), GE_BOOL: np.dtype(np.bool_),
}
if bfloat16 is not None:
    _NP_OF_GE[GE_BF16] = bfloat16
    for _code, _name in ((GE_F8E4M3FN, "float8_e4m3fn"), (GE_F8E4M3FNUZ, "float8_e4m3fnuz"),
                         (GE_F8E5M2, "float8_e5m2"), (GE_F8E5M2FNUZ, "float8_e5m2fnuz"),
                         (GE_F8E8M0, "float8_e8m0fnu"), (GE_U4, "uint4"), (GE_I4, "int4"),
                         (GE_F4E2M1, "float4_e2m1fn"), (GE_U2, "uint2"), (GE_I2, "int2")):
        if hasattr(_ml_dtypes, _name):  # older ml_dtypes lack some
            _NP_OF_GE[_code] = np.dtype(getattr(_ml_dtypes, _name))
_GE_OF_NP = {v: k for k, v in _NP_OF_GE.items()}

# names as ge_dtype_name() / onnxruntime's type strings
DTYPE_NAMES = {GE_F32: "float32", GE_F16: "float16", GE_BF16: "bfloat16", GE_F64: "float64",
               GE_I8: "int8", GE_I16: "int16", GE_I32: "int32", GE_I64: "int64",
               GE_U8: "uint8", GE_U16: "uint16", GE_U32: "uint32", GE_U64: "uint64",
               GE_BOOL: "bool", GE_STRING: "string",
               GE_F8E4M3FN: "float8e4m3fn", GE_F8E4M3FNUZ: "float8e4m3fnuz",
               GE_F8E5M2: "float8e5m2", GE_F8E5M2FNUZ: "float8e5m2fnuz",
               GE_F8E8M0: "float8e8m0", GE_U4: "uint4", GE_I4: "int4",
               GE_F4E2M1: "float4e2m1", GE_U2: "uint2", GE_I2: "int2"}
ORT_TYPE_NAMES = {GE_F32: "tensor(float)", GE_F16: "tensor(float16)",
                  GE_BF16: "tensor(bfloat16)", GE_F64: "tensor(double)",
                  GE_I8: "tensor(int8)", GE_I16: "tensor(int16)", GE_I32: "tensor(int32)",
                  GE_I64: "tensor(int64)", GE_U8: "tensor(uint8)", GE_U16: "tensor(uint16)",
                  GE_U32: "tensor(uint32)", GE_U64: "tensor(uint64)", GE_BOOL: "tensor(bool)",
                  GE_STRING: "tensor(string)"}
ORT_TYPE_NAMES.update({k: "tensor(%s)" % v for k, v in DTYPE_NAMES.items() if k > GE_STRING})
_GE_OF_NAME = {v: k for k, v in DTYPE_NAMES.items()}
_GE_OF_NAME.update({"float": GE_F32, "double": GE_F64, "half": GE_F16, "str": GE_STRING,
                    "object": GE_STRING})


def np_dtype(dt):
    """numpy dtype of a ge_dtype (object for strings)."""
    if dt == GE_STRING:
        return np.dtype(object)
    try:
        return _NP_OF_GE[dt]
    except KeyError:
        raise Unsupported("ge: dtype %s has no numpy equivalent%s"
                          % (DTYPE_NAMES.get(dt, str(dt)),
                             " (install ml_dtypes)" if dt == GE_BF16 or dt > GE_STRING else ""))


def ge_dtype_of(x):
    """ge_dtype of a numpy dtype, a dtype name ("float32", "float") or a ge_dtype int."""
    if isinstance(x, int) and not isinstance(x, bool):
        if 0 <= x < GE_DTYPE_COUNT:
            return x
        raise ValueError("ge: bad dtype code %d" % x)
    if isinstance(x, str) and x in _GE_OF_NAME:
        return _GE_OF_NAME[x]
    try:
        d = np.dtype(x)
    except TypeError:
        raise ValueError("ge: unknown dtype %r" % (x,))
    if d.kind in ("U", "S", "O"):
        return GE_STRING
    try:
        return _GE_OF_NP[d]
    except KeyError:
        raise ValueError("ge: numpy dtype %s is not supported by ge" % d)


# ----------------------------------------------------------------------------- prototypes

_vp = ctypes.c_void_p
_st = ctypes.c_int
_sz = ctypes.c_size_t
_vpp = ctypes.POINTER(ctypes.c_void_p)


def _proto(name, restype, *argtypes, required=True):
    fn = getattr(lib, name, None)
    if fn is None:
        if not required:
            return None

        def missing(*args):
            raise Unsupported("ge: %s lacks the function %s (library older than the package?)"
                              % (library_path, name), GE_ERR_UNSUPPORTED)
        missing.__name__ = name
        return missing
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


ge_status_str = _proto("ge_status_str", ctypes.c_char_p, _st)
ge_last_error = _proto("ge_last_error", ctypes.c_char_p)
ge_version = _proto("ge_version", ctypes.c_char_p)
ge_dtype_size = _proto("ge_dtype_size", _sz, ctypes.c_int)

ge_initialize = _proto("ge_initialize", _st, ctypes.POINTER(ge_option), _sz)
ge_finalize = _proto("ge_finalize", _st)

ge_tensor_create = _proto("ge_tensor_create", _st, ctypes.c_int, c_int64_p, _sz, _vpp)
ge_tensor_wrap = _proto("ge_tensor_wrap", _st, ctypes.c_int, c_int64_p, _sz, _vp, _sz,
                        RELEASE_FN, _vp, _vpp)
ge_tensor_free = _proto("ge_tensor_free", None, _vp)
ge_tensor_dtype = _proto("ge_tensor_dtype", ctypes.c_int, _vp)
ge_tensor_rank = _proto("ge_tensor_rank", _sz, _vp)
ge_tensor_dims = _proto("ge_tensor_dims", c_int64_p, _vp)
ge_tensor_numel = _proto("ge_tensor_numel", _sz, _vp)
ge_tensor_nbytes = _proto("ge_tensor_nbytes", _sz, _vp)
ge_tensor_data = _proto("ge_tensor_data", _vp, _vp)
ge_tensor_set_string = _proto("ge_tensor_set_string", _st, _vp, _sz, ctypes.c_char_p)

ge_graph_load = _proto("ge_graph_load", _st, ctypes.c_char_p, ctypes.POINTER(ge_option), _sz,
                       _vpp)
ge_graph_load_buffer = _proto("ge_graph_load_buffer", _st, ctypes.c_char_p, _sz,
                              ctypes.c_char_p, _vpp)
ge_graph_create = _proto("ge_graph_create", _st, ctypes.c_char_p, _vpp)
ge_graph_add_input = _proto("ge_graph_add_input", _st, _vp, ctypes.c_char_p, ctypes.c_int,
                            c_int64_p, _sz)
ge_graph_add_constant = _proto("ge_graph_add_constant", _st, _vp, ctypes.c_char_p, _vp)
ge_graph_add_node = _proto("ge_graph_add_node", _st, _vp, ctypes.c_char_p, ctypes.c_char_p,
                           c_char_pp, _sz, c_char_pp, _sz, ctypes.POINTER(ge_attr), _sz)
ge_graph_add_output = _proto("ge_graph_add_output", _st, _vp, ctypes.c_char_p)
ge_graph_set_opset = _proto("ge_graph_set_opset", _st, _vp, ctypes.c_char_p, ctypes.c_int64)
ge_graph_save = _proto("ge_graph_save", _st, _vp, ctypes.c_char_p)
ge_graph_free = _proto("ge_graph_free", None, _vp)
ge_graph_num_inputs = _proto("ge_graph_num_inputs", _sz, _vp)
ge_graph_num_outputs = _proto("ge_graph_num_outputs", _sz, _vp)
ge_graph_num_nodes = _proto("ge_graph_num_nodes", _sz, _vp)
ge_graph_input_info = _proto("ge_graph_input_info", _st, _vp, _sz,
                             ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                             ctypes.POINTER(c_int64_p), ctypes.POINTER(_sz))
ge_graph_output_info = _proto("ge_graph_output_info", _st, _vp, _sz,
                              ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                              ctypes.POINTER(c_int64_p), ctypes.POINTER(_sz))
ge_graph_input_dim_name = _proto("ge_graph_input_dim_name", ctypes.c_char_p, _vp, _sz, _sz)

ge_session_create = _proto("ge_session_create", _st, ctypes.POINTER(ge_option), _sz, _vpp)
ge_session_free = _proto("ge_session_free", None, _vp)
ge_session_add_graph = _proto("ge_session_add_graph", _st, _vp, ctypes.c_uint32, _vp)
ge_session_remove_graph = _proto("ge_session_remove_graph", _st, _vp, ctypes.c_uint32)
ge_session_build_graph = _proto("ge_session_build_graph", _st, _vp, ctypes.c_uint32)
ge_session_run_graph = _proto("ge_session_run_graph", _st, _vp, ctypes.c_uint32, _vpp, _sz,
                              _vpp, _sz)
ge_session_run_graph_async = _proto("ge_session_run_graph_async", _st, _vp, ctypes.c_uint32,
                                    _vpp, _sz, RUN_DONE_FN, _vp)
ge_session_graph_num_outputs = _proto("ge_session_graph_num_outputs", _st, _vp,
                                      ctypes.c_uint32, ctypes.POINTER(_sz))
class ge_run_stats(ctypes.Structure):
    _fields_ = [("runs", ctypes.c_uint64), ("runs_one_thread", ctypes.c_uint64),
                ("switches", ctypes.c_uint64), ("probes", ctypes.c_uint64),
                ("threads", ctypes.c_int), ("adaptive", ctypes.c_int)]


ge_session_graph_run_stats = _proto("ge_session_graph_run_stats", _st, _vp, ctypes.c_uint32,
                                    ctypes.POINTER(ge_run_stats))
ge_session_run_graph_into = _proto("ge_session_run_graph_into", _st, _vp, ctypes.c_uint32, _vpp,
                                   _sz, _vpp, _sz, required=False)

ge_tensor_clone = _proto("ge_tensor_clone", _st, _vp, _vpp)
# sequences and optionals (bound when the library has them)
GE_KIND_TENSOR, GE_KIND_SEQUENCE, GE_KIND_OPTIONAL = 0, 1, 2
ge_tensor_kind = _proto("ge_tensor_kind", ctypes.c_int, _vp, required=False)
ge_sequence_create = _proto("ge_sequence_create", _st, ctypes.c_int, _vpp, required=False)
ge_sequence_append = _proto("ge_sequence_append", _st, _vp, _vp, required=False)
ge_sequence_length = _proto("ge_sequence_length", _sz, _vp, required=False)
ge_sequence_at = _proto("ge_sequence_at", _vp, _vp, _sz, required=False)
ge_optional_create = _proto("ge_optional_create", _st, ctypes.c_int, _vp, _vpp, required=False)
ge_optional_value = _proto("ge_optional_value", _vp, _vp, required=False)
ge_value_elem_dtype = _proto("ge_value_elem_dtype", ctypes.c_int, _vp, required=False)
ge_value_clone = _proto("ge_value_clone", _st, _vp, _vpp, required=False)
ge_graph_input_kind = _proto("ge_graph_input_kind", ctypes.c_int, _vp, _sz, required=False)
ge_graph_output_kind = _proto("ge_graph_output_kind", ctypes.c_int, _vp, _sz, required=False)
ge_tensor_map_size = _proto("ge_tensor_map_size", _sz, _vp)
ge_tensor_map_key = _proto("ge_tensor_map_key", ctypes.c_char_p, _vp, _sz)
ge_tensor_map_value = _proto("ge_tensor_map_value", _vp, _vp, _sz)

# Not in ge.h yet (API.md lists it): bound when the library has it.
CALLBACK_FN = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p)
ge_session_register_callback = _proto("ge_session_register_callback", _st, _vp, ctypes.c_char_p,
                                      CALLBACK_FN, _vp, required=False)

# ----------------------------------------------------------------------------- helpers


def last_error():
    m = ge_last_error()
    return m.decode("utf-8", "replace") if m else ""


def error_for(status, context=None):
    """The exception of a failed call; reads ge_last_error() (call on the failing thread)."""
    msg = last_error()
    if not msg:
        s = ge_status_str(status)
        msg = s.decode() if s else "ge status %d" % status
    if context:
        msg = "%s: %s" % (context, msg)
    cls = _ERRORS.get(status, GeError)
    return cls(msg, status)


def check(status, context=None):
    if status != GE_OK:
        raise error_for(status, context)


def encode(s):
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8")


def make_options(options):
    """(ge_option array, keepalive) from a dict; values become strings (bools: true/false)."""
    if not options:
        return None, 0, None
    items = []
    for k, v in options.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        items.append((encode(k), encode(v)))
    arr = (ge_option * len(items))()
    for i, (k, v) in enumerate(items):
        arr[i].key = k
        arr[i].value = v
    return arr, len(items), items


# ----------------------------------------------------------------------------- the C run path


def _load_fast():
    """ge._gefast from the library's folder, given this library's functions; None without it."""
    if os.environ.get("GE_PY_FAST", "1") == "0" or ge_tensor_kind is None:
        return None
    path = os.path.join(os.path.dirname(library_path), "_gefast.so")
    if not os.path.exists(path):
        return None
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location(__package__ + "._gefast", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        addr = [ctypes.cast(f, ctypes.c_void_p).value for f in (
            lib.ge_tensor_wrap, lib.ge_tensor_free, lib.ge_session_run_graph, lib.ge_tensor_kind,
            lib.ge_tensor_dtype, lib.ge_tensor_rank, lib.ge_tensor_dims, lib.ge_tensor_nbytes,
            lib.ge_tensor_data)]
        # numpy's builtin dtypes only (bfloat16 and the float8s of ml_dtypes are not builtin)
        types = {g: d.num for g, d in _NP_OF_GE.items() if d.num < 64 and d.isbuiltin == 1}
        into = ge_session_run_graph_into
        mod.init(*addr, types, ctypes.cast(into, ctypes.c_void_p).value if into is not None else 0)
        return mod
    except Exception:  # an extension built for another Python or numpy: the ctypes path
        return None


fast = _load_fast()
