"""Variables, callbacks with priorities, callback metrics and checkpoints for ge.Session.

Importing this module (ge does it) adds to ge.Graph:
    g.add_variable(name, initial)                  a session variable (ai.ge::Assign* write it)
and to ge.Session:
    s.add_callback(key, fn, priority=0)            one more callback for a key (ascending priority)
    s.callback_stats(key=None)                     {calls, failures, total_ms, mean_ms, max_ms,
                                                    bytes} for a key, or {key: stats} for all
    s.get_variables(names)                         {name: ndarray}
    s.set_variables({name: array})
    s.restore_variables(path)                      from a safetensors checkpoint
A callback is fn(graph_id, {name: ndarray}) -> int (0 or None: success).  An exception in it
counts as a failure and its traceback is logged; it never reaches the engine.
"""

import ctypes
import sys
import traceback

import numpy as np

from . import _lib as L
from ._tensor import from_numpy, to_numpy
from .session import Graph, Session

_vp = ctypes.c_void_p
_st = ctypes.c_int
_sz = ctypes.c_size_t


class CallbackStats(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_uint64), ("failures", ctypes.c_uint64),
                ("total_ms", ctypes.c_double), ("mean_ms", ctypes.c_double),
                ("max_ms", ctypes.c_double), ("bytes", ctypes.c_uint64)]


def _bind(name, restype, *argtypes):
    fn = getattr(L.lib, name, None)
    if fn is None:
        return None
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_add_variable = _bind("ge_graph_add_variable", _st, _vp, ctypes.c_char_p, _vp)
_add_callback = _bind("ge_session_add_callback", _st, _vp, ctypes.c_char_p, L.CALLBACK_FN, _vp,
                      ctypes.c_int)
_stats = _bind("ge_session_callback_stats", _st, _vp, ctypes.c_char_p,
               ctypes.POINTER(CallbackStats))
_key = _bind("ge_session_callback_key", _st, _vp, _sz, ctypes.POINTER(ctypes.c_char_p))
_get_vars = _bind("ge_session_get_variables", _st, _vp, ctypes.POINTER(ctypes.c_char_p), _sz,
                  ctypes.POINTER(_vp))
_set_vars = _bind("ge_session_set_variables", _st, _vp, _vp)
_restore = _bind("ge_session_restore_variables", _st, _vp, ctypes.c_char_p)
_map_create = _bind("ge_tensor_map_create", _st, ctypes.POINTER(_vp))
_map_put = _bind("ge_tensor_map_put", _st, _vp, ctypes.c_char_p, _vp)
_map_free = _bind("ge_tensor_map_free", None, _vp)


def _need(fn, name):
    if fn is None:
        raise L.Unsupported("ge: %s lacks %s" % (L.library_path, name), L.GE_ERR_UNSUPPORTED)
    return fn


def _map_to_dict(params):
    d = {}
    for i in range(L.ge_tensor_map_size(params)):
        k = L.ge_tensor_map_key(params, i).decode("utf-8", "replace")
        c = ctypes.c_void_p()
        L.check(L.ge_tensor_clone(L.ge_tensor_map_value(params, i), ctypes.byref(c)))
        d[k] = to_numpy(c.value)
    return d


def _trampoline(fn, key):
    def call(graph_id, params, user):
        try:
            r = fn(int(graph_id), _map_to_dict(params))
            return int(r or 0) & 0xFFFFFFFF
        except BaseException:  # noqa: BLE001 - a callback never raises into the engine
            traceback.print_exc()
            sys.stderr.write("ge: the Python callback for key %r raised; counted as a failure\n"
                             % key)
            return 1
    return L.CALLBACK_FN(call)


def _keep(self, cb):
    # In-flight runs may still call an earlier callback after a replacement: keep every
    # callback object alive as long as the session.
    keep = self.__dict__.setdefault("_cb_keepalive", [])
    keep.append(cb)


def add_variable(self, name, initial):
    """Declares a variable with an initial value (copied)."""
    t = from_numpy(np.asarray(initial), "variable %r" % name)
    try:
        L.check(_need(_add_variable, "ge_graph_add_variable")(self.ptr, L.encode(name), t.ptr))
    finally:
        t.free()
    return name


def register_callback(self, key, fn):
    """Sets fn(graph_id, {name: ndarray}) -> int as the only callback of `key` ("Summary",
    "Save" or a Callback op's key), replacing earlier ones."""
    if not callable(fn):
        raise L.InvalidArgument("register_callback: fn is not callable", L.GE_ERR_INVALID_ARGUMENT)
    cb = _trampoline(fn, key)
    _keep(self, cb)
    L.check(_need(L.ge_session_register_callback, "ge_session_register_callback")(
        self.ptr, L.encode(key), cb, None))
    self._callbacks[key] = cb


def add_callback(self, key, fn, priority=0):
    """Adds one more callback to `key`; callbacks run in ascending priority, then in the order
    they were added."""
    if not callable(fn):
        raise L.InvalidArgument("add_callback: fn is not callable", L.GE_ERR_INVALID_ARGUMENT)
    cb = _trampoline(fn, key)
    _keep(self, cb)
    L.check(_need(_add_callback, "ge_session_add_callback")(self.ptr, L.encode(key), cb, None,
                                                            int(priority)))


def _stats_dict(st):
    return {"calls": st.calls, "failures": st.failures, "total_ms": st.total_ms,
            "mean_ms": st.mean_ms, "max_ms": st.max_ms, "bytes": st.bytes}


def callback_stats(self, key=None):
    """Metrics of one key, or {key: metrics} for every key the session knows."""
    fn = _need(_stats, "ge_session_callback_stats")
    ptr = self.ptr
    if key is not None:
        st = CallbackStats()
        L.check(fn(ptr, L.encode(key), ctypes.byref(st)))
        return _stats_dict(st)
    out = {}
    i = 0
    k = ctypes.c_char_p()
    while _need(_key, "ge_session_callback_key")(ptr, i, ctypes.byref(k)) == L.GE_OK:
        st = CallbackStats()
        L.check(fn(ptr, k.value, ctypes.byref(st)))
        out[k.value.decode()] = _stats_dict(st)
        i += 1
    return out


def get_variables(self, names):
    """{name: ndarray} copies of the current values."""
    if isinstance(names, str):
        names = [names]
    names = list(names)
    c_names = (ctypes.c_char_p * max(len(names), 1))(*[L.encode(n) for n in names])
    outs = (_vp * max(len(names), 1))()
    L.check(_need(_get_vars, "ge_session_get_variables")(self.ptr, c_names, len(names), outs))
    return {n: to_numpy(outs[i]) for i, n in enumerate(names)}


def set_variables(self, values):
    """Sets variables from {name: array} (same dtype and shape as declared)."""
    m = ctypes.c_void_p()
    L.check(_need(_map_create, "ge_tensor_map_create")(ctypes.byref(m)))
    try:
        for name, arr in values.items():
            arr = np.array(arr, copy=True)  # the map owns the tensor; keep no alias
            c = ctypes.c_void_p()
            t = from_numpy(arr, "variable %r" % name)
            try:
                L.check(L.ge_tensor_clone(t.ptr, ctypes.byref(c)))
            finally:
                t.free()
            L.check(_map_put(m, L.encode(name), c))
        L.check(_need(_set_vars, "ge_session_set_variables")(self.ptr, m))
    finally:
        _map_free(m)


def restore_variables(self, path):
    """Reads a safetensors checkpoint into the session's variables."""
    L.check(_need(_restore, "ge_session_restore_variables")(self.ptr, L.encode(str(path))))


Graph.add_variable = add_variable
Session.register_callback = register_callback
Session.add_callback = add_callback
Session.callback_stats = callback_stats
Session.get_variables = get_variables
Session.set_variables = set_variables
Session.restore_variables = restore_variables


# ----------------------------------------------------------------------------- built-in consumers

_sw_create = _bind("ge_summary_writer_create", _st, ctypes.c_char_p, ctypes.POINTER(_vp))
_sw_free = _bind("ge_summary_writer_free", None, _vp)
_sw_path = _bind("ge_summary_writer_path", ctypes.c_char_p, _vp)
_cw_create = _bind("ge_checkpoint_writer_create", _st, ctypes.c_char_p, ctypes.POINTER(_vp))
_cw_free = _bind("ge_checkpoint_writer_free", None, _vp)
_cw_count = _bind("ge_checkpoint_writer_count", ctypes.c_uint64, _vp)


class _Writer:
    _free = None
    _cb_name = None

    def __init__(self, ptr):
        self.ptr = ptr

    def close(self):
        p, self.ptr = self.ptr, None
        if p:
            type(self)._free(p)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def c_callback(self):
        return ctypes.cast(getattr(L.lib, self._cb_name), L.CALLBACK_FN)


class SummaryWriter(_Writer):
    """A TensorBoard event file in `logdir` (which must exist) for "Summary" data."""
    _free = staticmethod(lambda p: _sw_free(p))
    _cb_name = "ge_summary_writer_callback"

    def __init__(self, logdir):
        p = ctypes.c_void_p()
        L.check(_need(_sw_create, "ge_summary_writer_create")(L.encode(str(logdir)),
                                                               ctypes.byref(p)))
        super().__init__(p.value)
        self.path = _sw_path(p).decode()


class CheckpointWriter(_Writer):
    """Writes "<prefix>-<graph>-<n>.safetensors" and "<prefix>-latest.safetensors" per "Save"."""
    _free = staticmethod(lambda p: _cw_free(p))
    _cb_name = "ge_checkpoint_writer_callback"

    def __init__(self, prefix):
        p = ctypes.c_void_p()
        L.check(_need(_cw_create, "ge_checkpoint_writer_create")(L.encode(str(prefix)),
                                                                  ctypes.byref(p)))
        super().__init__(p.value)
        self.prefix = str(prefix)

    @property
    def count(self):
        return int(_cw_count(self.ptr)) if self.ptr else 0


def add_writer(self, key, writer, priority=0):
    """Adds a built-in consumer (SummaryWriter, CheckpointWriter) as a callback of `key`; the
    session keeps the writer alive."""
    cb = writer.c_callback()
    _keep(self, cb)
    _keep(self, writer)
    L.check(_need(_add_callback, "ge_session_add_callback")(self.ptr, L.encode(key), cb,
                                                            writer.ptr, int(priority)))


Session.add_writer = add_writer
