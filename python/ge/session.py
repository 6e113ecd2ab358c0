"""InferenceSession (onnxruntime-shaped), Session (GE-shaped), Graph (loader and builder),
initialize/finalize."""

import concurrent.futures
import ctypes
import itertools
import os
import threading

import numpy as np

from . import _lib as L
from ._tensor import CTensor, free_outputs, from_numpy, from_value, outputs_to_numpy, to_numpy

__all__ = ["ValueInfo", "Graph", "Session", "InferenceSession", "initialize", "finalize",
           "PRECISION_MODES"]

# `precision` argument of InferenceSession -> ge.exec.precision_mode
PRECISION_MODES = {
    None: None, "origin": None, "must_keep_origin_dtype": "must_keep_origin_dtype",
    "fp32": "force_fp32", "force_fp32": "force_fp32",
    "bf16": "allow_fp32_to_bf16", "allow_fp32_to_bf16": "allow_fp32_to_bf16",
    "fp16": "allow_fp32_to_fp16", "allow_fp32_to_fp16": "allow_fp32_to_fp16",
    "mixed_bf16": "allow_mix_precision_bf16", "mixed-bf16": "allow_mix_precision_bf16",
    "allow_mix_precision_bf16": "allow_mix_precision_bf16",
    "mixed_fp16": "allow_mix_precision_fp16", "mixed-fp16": "allow_mix_precision_fp16",
    "allow_mix_precision_fp16": "allow_mix_precision_fp16",
    "mixed": "allow_mix_precision_bf16",
}

# ------------------------------------------------------------------ process

_state_lock = threading.Lock()
_state = {"initialized": False, "finalized": False}


def initialize(options=None):
    """ge_initialize: process-wide defaults of every session (the keys of docs/options.md)."""
    arr, n, _keep = L.make_options(options)
    with _state_lock:
        L.check(L.ge_initialize(arr, n), "ge.initialize")
        _state["initialized"] = True
        _state["finalized"] = False


def finalize():
    """ge_finalize: drains pending work; live sessions refuse later calls."""
    with _state_lock:
        L.check(L.ge_finalize(), "ge.finalize")
        _state["finalized"] = True
        _state["initialized"] = False


def _create_session(options):
    arr, n, _keep = L.make_options(options)
    out = ctypes.c_void_p()
    st = L.ge_session_create(arr, n, ctypes.byref(out))
    if st == L.GE_ERR_STATE:
        # Not initialized yet: initialize with defaults, unless the user finalized.
        err = L.error_for(st, "ge.Session")
        with _state_lock:
            if _state["initialized"] or _state["finalized"]:
                raise err
            L.check(L.ge_initialize(None, 0), "ge.initialize")
            _state["initialized"] = True
        st = L.ge_session_create(arr, n, ctypes.byref(out))
    L.check(st, "ge.Session")
    return out.value


# ------------------------------------------------------------------ value info


class ValueInfo:
    """A graph input or output: .name, .shape (ints, str for symbolic dims, None for unknown),
    .type ("tensor(float)" like onnxruntime), .dtype (numpy dtype or None)."""

    __slots__ = ("name", "shape", "type", "dtype", "ge_dtype", "kind")

    def __init__(self, name, ge_dtype, shape, kind=0):
        self.name = name
        self.ge_dtype = ge_dtype
        self.shape = shape
        self.kind = kind  # L.GE_KIND_TENSOR, GE_KIND_SEQUENCE or GE_KIND_OPTIONAL
        self.type = L.ORT_TYPE_NAMES.get(ge_dtype, "tensor(unknown)")
        if kind == L.GE_KIND_SEQUENCE:
            self.type = "seq(%s)" % self.type
        elif kind == L.GE_KIND_OPTIONAL:
            self.type = "optional(%s)" % self.type
        try:
            self.dtype = L.np_dtype(ge_dtype)
        except L.GeError:
            self.dtype = None

    def __repr__(self):
        return "ValueInfo(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _graph_values(gptr, outputs):
    info = L.ge_graph_output_info if outputs else L.ge_graph_input_info
    n = (L.ge_graph_num_outputs if outputs else L.ge_graph_num_inputs)(gptr)
    res = []
    for i in range(n):
        name = ctypes.c_char_p()
        dt = ctypes.c_int()
        dims = L.c_int64_p()
        rank = ctypes.c_size_t()
        L.check(info(gptr, i, ctypes.byref(name), ctypes.byref(dt), ctypes.byref(dims),
                     ctypes.byref(rank)))
        kind_fn = L.ge_graph_output_kind if outputs else L.ge_graph_input_kind
        kind = max(kind_fn(gptr, i), 0) if kind_fn is not None else 0
        if not 0 <= dt.value < len(L.ORT_TYPE_NAMES):  # not inferred yet (builder outputs)
            res.append(ValueInfo(name.value.decode() if name.value else "", dt.value, None, kind))
            continue
        shape = []
        for d in range(rank.value):
            v = int(dims[d])
            if v >= 0:
                shape.append(v)
                continue
            sym = None if outputs else L.ge_graph_input_dim_name(gptr, i, d)
            shape.append(sym.decode() if sym else None)
        res.append(ValueInfo(name.value.decode() if name.value else "", dt.value, shape, kind))
    return res


# ------------------------------------------------------------------ graph


def _shape_dims(shape):
    dims = []
    for d in shape:
        if d is None or isinstance(d, str):
            dims.append(-1)
        else:
            d = int(d)
            if d < -1:
                raise ValueError("ge: bad dimension %d in shape %r" % (d, tuple(shape)))
            dims.append(d)
    return dims


class Graph:
    """A ge_graph: `Graph.load(path)`, `Graph.from_bytes(data)` or built with `Graph(name)`."""

    def __init__(self, name="graph", _ptr=None):
        if _ptr is None:
            out = ctypes.c_void_p()
            L.check(L.ge_graph_create(L.encode(name), ctypes.byref(out)), "ge.Graph(%r)" % name)
            _ptr = out.value
        self._ptr = _ptr
        self.name = name

    @classmethod
    def load(cls, path, options=None):
        path = os.fspath(path)
        arr, n, _keep = L.make_options(options)
        out = ctypes.c_void_p()
        L.check(L.ge_graph_load(L.encode(path), arr, n, ctypes.byref(out)))
        return cls(os.path.basename(path), _ptr=out.value)

    @classmethod
    def from_bytes(cls, data, base_dir=None, name="graph"):
        data = bytes(data)
        out = ctypes.c_void_p()
        L.check(L.ge_graph_load_buffer(data, len(data),
                                       L.encode(base_dir) if base_dir else None,
                                       ctypes.byref(out)))
        return cls(name, _ptr=out.value)

    @property
    def ptr(self):
        if not self._ptr:
            raise L.StateError("ge.Graph: the graph was freed")
        return self._ptr

    def free(self):
        p, self._ptr = self._ptr, None
        if p:
            L.ge_graph_free(p)

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    # builder --------------------------------------------------------------------------

    def add_input(self, name, dtype, shape):
        dims = _shape_dims(shape)
        arr = (ctypes.c_int64 * max(len(dims), 1))(*dims)
        L.check(L.ge_graph_add_input(self.ptr, L.encode(name), L.ge_dtype_of(dtype), arr,
                                     len(dims)))
        return name

    def add_constant(self, name, value):
        t = from_numpy(np.asarray(value), "constant %r" % name)
        try:
            L.check(L.ge_graph_add_constant(self.ptr, L.encode(name), t.ptr))
        finally:
            t.free()
        return name

    def add_node(self, op_type, inputs, outputs, name=None, **attrs):
        inputs = [("" if i is None else i) for i in inputs]
        outputs = list(outputs)
        keep = []
        c_in = (ctypes.c_char_p * max(len(inputs), 1))(*[L.encode(i) for i in inputs])
        c_out = (ctypes.c_char_p * max(len(outputs), 1))(*[L.encode(o) for o in outputs])
        c_attrs = (L.ge_attr * max(len(attrs), 1))()
        for k, (an, av) in enumerate(attrs.items()):
            _fill_attr(c_attrs[k], an, av, keep)
        try:
            L.check(L.ge_graph_add_node(self.ptr, L.encode(op_type),
                                        L.encode(name) if name is not None else None,
                                        c_in, len(inputs), c_out, len(outputs),
                                        c_attrs, len(attrs)))
        finally:
            for t in keep:
                if isinstance(t, CTensor):
                    t.free()
        return outputs[0] if len(outputs) == 1 else outputs

    def add_output(self, name):
        L.check(L.ge_graph_add_output(self.ptr, L.encode(name)))
        return name

    def set_opset(self, domain, version):
        L.check(L.ge_graph_set_opset(self.ptr, L.encode(domain or ""), int(version)))

    def save(self, path):
        L.check(L.ge_graph_save(self.ptr, L.encode(os.fspath(path))))

    # introspection --------------------------------------------------------------------

    @property
    def inputs(self):
        return _graph_values(self.ptr, False)

    @property
    def outputs(self):
        return _graph_values(self.ptr, True)

    @property
    def num_nodes(self):
        return L.ge_graph_num_nodes(self.ptr)

    def __repr__(self):
        if not self._ptr:
            return "<ge.Graph (freed)>"
        return "<ge.Graph %r: %d inputs, %d outputs, %d nodes>" % (
            self.name, L.ge_graph_num_inputs(self._ptr), L.ge_graph_num_outputs(self._ptr),
            L.ge_graph_num_nodes(self._ptr))


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool) or isinstance(x, bool)


def _is_float(x):
    return isinstance(x, (float, np.floating))


def _is_str(x):
    return isinstance(x, (str, bytes, np.str_))


def _fill_attr(a, name, value, keep):
    """Fills the ge_attr `a`; `keep` receives what must live until the call returns."""
    nm = L.encode(name)
    keep.append(nm)
    a.name = nm
    v = a.v
    if isinstance(value, Graph):
        a.kind = L.GE_ATTR_KIND_GRAPH
        v.p = value.ptr
        keep.append(value)
    elif isinstance(value, np.ndarray):
        t = from_numpy(value, "attribute %r" % name)
        keep.append(t)
        a.kind = L.GE_ATTR_KIND_TENSOR
        v.p = t.ptr
    elif _is_int(value):
        a.kind = L.GE_ATTR_KIND_INT
        v.i = int(value)
    elif _is_float(value):
        a.kind = L.GE_ATTR_KIND_FLOAT
        v.f = float(value)
    elif _is_str(value):
        s = L.encode(value)
        keep.append(s)
        a.kind = L.GE_ATTR_KIND_STRING
        v.s = s
    elif isinstance(value, (list, tuple)):
        vals = list(value)
        n = len(vals)
        if all(_is_int(x) for x in vals):  # also the empty list
            arr = (ctypes.c_int64 * max(n, 1))(*[int(x) for x in vals])
            a.kind = L.GE_ATTR_KIND_INTS
        elif all(_is_int(x) or _is_float(x) for x in vals):
            arr = (ctypes.c_float * n)(*[float(x) for x in vals])
            a.kind = L.GE_ATTR_KIND_FLOATS
        elif all(_is_str(x) for x in vals):
            enc = [L.encode(x) for x in vals]
            keep.append(enc)
            arr = (ctypes.c_char_p * n)(*enc)
            a.kind = L.GE_ATTR_KIND_STRINGS
        elif all(isinstance(x, np.ndarray) for x in vals):
            ts = [from_numpy(x, "attribute %r" % name) for x in vals]
            keep.extend(ts)
            arr = (ctypes.c_void_p * n)(*[t.ptr for t in ts])
            a.kind = L.GE_ATTR_KIND_TENSORS
        elif all(isinstance(x, Graph) for x in vals):
            keep.extend(vals)
            arr = (ctypes.c_void_p * n)(*[g.ptr for g in vals])
            a.kind = L.GE_ATTR_KIND_GRAPHS
        else:
            raise TypeError("ge: attribute %r: cannot map a list of %s to an attribute kind"
                            % (name, sorted({type(x).__name__ for x in vals})))
        keep.append(arr)
        v.span.data = ctypes.cast(arr, ctypes.c_void_p)
        v.span.n = n
    elif isinstance(value, (np.generic,)):
        _fill_attr(a, name, value.item(), keep)
    else:
        raise TypeError("ge: attribute %r: unsupported value type %s" % (name, type(value).__name__))


# ------------------------------------------------------------------ session


def _prepare_inputs(values, infos, context):
    """CTensors for `values` (a list in graph input order)."""
    tensors = []
    try:
        for k, val in enumerate(values):
            info = infos[k] if infos is not None and k < len(infos) else None
            kind = getattr(info, "kind", 0) if info is not None else None
            if kind is None:  # no graph info: lists of arrays are sequences
                seq_like = val is None or (isinstance(val, (list, tuple)) and
                                           all(isinstance(x, np.ndarray) for x in val))
            else:
                seq_like = kind != L.GE_KIND_TENSOR and (val is None or isinstance(val, (list, tuple)))
            if seq_like:  # an optional / a sequence
                name = info.name if info is not None else str(k)
                tensors.append(from_value(val, "%s: input %d (%r)" % (context, k, name),
                                          info.dtype if info is not None else None))
                continue
            if isinstance(val, np.ndarray):
                arr = val
            elif info is not None and info.dtype is not None:
                arr = np.asarray(val, dtype=info.dtype)
            else:
                arr = np.asarray(val)
            if info is not None and info.dtype is not None:
                want = L.ge_dtype_of(info.dtype)
                try:
                    got = L.ge_dtype_of(arr.dtype)
                except ValueError:
                    got = None
                if got != want:
                    raise L.InvalidArgument(
                        "%s: input %d (%r) expects %s, got a numpy array of dtype %s"
                        % (context, k, info.name, L.DTYPE_NAMES[want], arr.dtype),
                        L.GE_ERR_INVALID_ARGUMENT)
            name = info.name if info is not None else str(k)
            tensors.append(from_numpy(arr, "%s: input %d (%r)" % (context, k, name)))
    except BaseException:
        for t in tensors:
            t.free()
        raise
    return tensors


def _fast_want(infos):
    """The declared input dtypes for L.fast.run (-1: any), or False where an input is not a
    tensor (sequences and optionals take the ctypes path)."""
    if infos is None:
        return None
    want = []
    for info in infos:
        if getattr(info, "kind", L.GE_KIND_TENSOR) != L.GE_KIND_TENSOR:
            return False
        want.append(info.ge_dtype if info.ge_dtype is not None else -1)
    return tuple(want)


def _fast_output(res, i):
    """Output i of an L.fast run that it returned as a ge_tensor* address: converted by the
    ctypes path; on failure the other addresses left are freed too."""
    try:
        return to_numpy(res[i])
    except BaseException:
        free_outputs([p for p in res[i + 1:] if type(p) is int])
        raise


def _free_all(tensors):
    for t in tensors:
        t.free()


class _AsyncRuns:
    """Pending async runs of one session and the C completion callback resolving them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pending = {}  # token -> (future, input tensors kept alive until done)
        self.tokens = itertools.count(1)
        self.done = L.RUN_DONE_FN(self._on_done)  # lives as long as the session

    def _on_done(self, status, outputs, n_out, user):
        # Runs on a library thread (ctypes takes the GIL).  Must not raise.
        with self.lock:
            entry = self.pending.pop(int(user or 0), None)
        try:
            if status != L.GE_OK:
                err = L.error_for(status, "ge.Session.run_graph_async")
                if outputs:
                    from ._tensor import free_outputs
                    free_outputs([outputs[i] for i in range(n_out)])
                if entry is not None and not entry[0].done():
                    entry[0].set_exception(err)
                return
            res = outputs_to_numpy(outputs, n_out) if outputs else [None] * n_out
            if entry is not None and not entry[0].done():
                entry[0].set_result(res)
        except BaseException as e:  # noqa: BLE001 - must not propagate into C
            if entry is not None and not entry[0].done():
                entry[0].set_exception(e)
        finally:
            if entry is not None:
                _free_all(entry[1])


class Session:
    """A ge_session: graphs by id, built ahead of time, run synchronously or asynchronously."""

    def __init__(self, options=None):
        self._lock = threading.Lock()
        self._ptr = None
        self._ptr = _create_session(options)
        self._infos = {}        # graph id -> list of input ValueInfo (dtype checks)
        self._n_out = {}        # graph id -> number of outputs
        self._fast_want = {}    # graph id -> declared input dtypes for L.fast; absent: not taken
        self._async = _AsyncRuns()  # no reference back to self: no cycle, prompt __del__
        self._callbacks = {}    # key -> CFUNCTYPE object

    @property
    def ptr(self):
        p = self._ptr
        if not p:
            raise L.StateError("ge.Session: the session is closed", L.GE_ERR_STATE)
        return p

    def close(self):
        """Drains pending async runs, then frees the session."""
        with self._lock:
            p, self._ptr = self._ptr, None
        if p:
            L.ge_session_free(p)  # calls _on_done for pending runs (ctypes releases the GIL)
        with self._async.lock:
            pending, self._async.pending = self._async.pending, {}
        for fut, tensors in pending.values():
            _free_all(tensors)
            if not fut.done():
                fut.set_exception(L.StateError("ge.Session closed before the run finished",
                                               L.GE_ERR_STATE))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def add_graph(self, graph_id, graph):
        """Adds a copy of `graph` (a ge.Graph, a path, or ONNX bytes) under `graph_id`."""
        owned = None
        if not isinstance(graph, Graph):
            owned = graph = (Graph.from_bytes(graph) if isinstance(graph, (bytes, bytearray))
                             else Graph.load(graph))
        try:
            L.check(L.ge_session_add_graph(self.ptr, int(graph_id), graph.ptr))
            infos = graph.inputs
            n_out = L.ge_graph_num_outputs(graph.ptr)
        finally:
            if owned is not None:
                owned.free()
        self._infos[int(graph_id)] = infos
        self._n_out[int(graph_id)] = n_out
        self._fast_want[int(graph_id)] = _fast_want(infos)

    def remove_graph(self, graph_id):
        L.check(L.ge_session_remove_graph(self.ptr, int(graph_id)))
        self._infos.pop(int(graph_id), None)
        self._n_out.pop(int(graph_id), None)
        self._fast_want.pop(int(graph_id), None)

    def build_graph(self, graph_id):
        L.check(L.ge_session_build_graph(self.ptr, int(graph_id)))

    def run_stats(self, graph_id):
        """How graph `graph_id`'s runs used their threads: a dict of runs, runs_one_thread
        (runs the adaptive thread count, ge.exec.adaptiveThreads, took on one thread while
        the ge.intraOpThreads threads kept waiting for one another), switches, probes,
        threads and adaptive (bool)."""
        st = L.ge_run_stats()
        L.check(L.ge_session_graph_run_stats(self.ptr, int(graph_id), ctypes.byref(st)))
        return {"runs": st.runs, "runs_one_thread": st.runs_one_thread, "switches": st.switches,
                "probes": st.probes, "threads": st.threads, "adaptive": bool(st.adaptive)}

    def _num_outputs(self, graph_id):
        n = self._n_out.get(graph_id)
        if n is None:
            c = ctypes.c_size_t()
            L.check(L.ge_session_graph_num_outputs(self.ptr, graph_id, ctypes.byref(c)))
            n = c.value
        return n

    def run_graph(self, graph_id, inputs=(), outputs=None):
        """Runs graph `graph_id` on `inputs` (in graph input order) -> list of numpy arrays.

        outputs: optional list of preallocated numpy arrays, one per graph output, with the
        output's dtype and shape, C-contiguous and writeable; the run writes into them (no
        new arrays are made) and returns that same list."""
        gid = int(graph_id)
        n_out = self._num_outputs(gid)
        inputs = inputs if type(inputs) is list else list(inputs)
        if outputs is not None:
            return self._run_into(gid, n_out, inputs, outputs)
        res = self._run_fast(gid, n_out, inputs)
        if res is not None:
            return res
        tensors = _prepare_inputs(inputs, self._infos.get(gid),
                                  "ge.Session.run_graph(%d)" % gid)
        try:
            c_in = (ctypes.c_void_p * max(len(tensors), 1))(*[t.ptr for t in tensors])
            c_out = (ctypes.c_void_p * max(n_out, 1))()
            L.check(L.ge_session_run_graph(self.ptr, gid, c_in, len(tensors), c_out, n_out))
        finally:
            _free_all(tensors)
        return outputs_to_numpy(c_out, n_out)

    def _fast_want_of(self, gid):
        """The declared input dtypes L.fast (the C path) checks graph gid's inputs against, or
        False where it cannot take the graph's runs (not built, or non-tensor inputs)."""
        return self._fast_want.get(gid, False) if L.fast is not None else False

    def _run_fast(self, gid, n_out, inputs):
        """The outputs of a run on L.fast (the C path), or None where it does not take the
        inputs (nothing ran: the ctypes path takes the call)."""
        want = self._fast_want_of(gid)
        if want is False:
            return None
        r = L.fast.run(self.ptr, gid, inputs, n_out, want)
        if r is None:
            return None
        L.check(r[0])
        res = r[1]
        for i, o in enumerate(res):
            if type(o) is int:  # a value only the ctypes path converts
                res[i] = _fast_output(res, i)
        return res

    def _run_into(self, gid, n_out, inputs, outputs):
        what = "ge.Session.run_graph(%d)" % gid
        outputs = list(outputs)
        if len(outputs) != n_out:
            raise L.InvalidArgument("%s: the graph has %d outputs, got %d output arrays"
                                    % (what, n_out, len(outputs)), L.GE_ERR_INVALID_ARGUMENT)
        for i, a in enumerate(outputs):
            if (not isinstance(a, np.ndarray) or not a.flags.c_contiguous or not a.flags.writeable
                    or not a.flags.aligned):
                raise L.InvalidArgument("%s: output array %d must be a C-contiguous, aligned, "
                                        "writeable numpy array" % (what, i),
                                        L.GE_ERR_INVALID_ARGUMENT)
        if L.ge_session_run_graph_into is None:
            raise L.Unsupported("ge: this library cannot write into output arrays",
                                L.GE_ERR_UNSUPPORTED)
        want = self._fast_want_of(gid)
        if want is not False:  # the C path (None: it leaves the call here)
            st = L.fast.run_into(self.ptr, gid, inputs, outputs, want)
            if st is not None:
                L.check(st, what)
                return outputs
        tensors = _prepare_inputs(inputs, self._infos.get(gid), what)
        outs = []
        try:
            outs = [from_numpy(a, what) for a in outputs]
            c_in = (ctypes.c_void_p * max(len(tensors), 1))(*[t.ptr for t in tensors])
            c_out = (ctypes.c_void_p * max(n_out, 1))(*[t.ptr for t in outs])
            L.check(L.ge_session_run_graph_into(self.ptr, gid, c_in, len(tensors), c_out, n_out),
                    what)
        finally:
            _free_all(tensors)
            _free_all(outs)
        return outputs

    def run_graph_async(self, graph_id, inputs=()):
        """Starts a run; returns a concurrent.futures.Future resolved with the output list."""
        gid = int(graph_id)
        tensors = _prepare_inputs(list(inputs), self._infos.get(gid),
                                  "ge.Session.run_graph_async(%d)" % gid)
        fut = concurrent.futures.Future()
        fut.set_running_or_notify_cancel()
        runs = self._async
        token = next(runs.tokens)
        with runs.lock:
            runs.pending[token] = (fut, tensors)
        c_in = (ctypes.c_void_p * max(len(tensors), 1))(*[t.ptr for t in tensors])
        try:
            st = L.ge_session_run_graph_async(self.ptr, gid, c_in, len(tensors), runs.done,
                                              ctypes.c_void_p(token))
            if st != L.GE_OK:
                raise L.error_for(st)
        except BaseException:
            with runs.lock:
                entry = runs.pending.pop(token, None)
            if entry is not None:
                _free_all(entry[1])
            raise
        return fut

    def register_callback(self, key, fn):
        """fn(graph_id, {name: ndarray}) -> int (0 to continue), called for "Summary", "Save" or
        a custom Callback op key.  Needs ge_session_register_callback in the library."""
        reg = L.ge_session_register_callback
        if reg is None:
            raise L.Unsupported("ge: this libge has no ge_session_register_callback",
                                L.GE_ERR_UNSUPPORTED)

        def trampoline(graph_id, params, user):
            try:
                d = {}
                n = L.ge_tensor_map_size(params)
                from ._tensor import to_numpy
                for i in range(n):
                    k = L.ge_tensor_map_key(params, i).decode()
                    t = L.ge_tensor_map_value(params, i)
                    c = ctypes.c_void_p()
                    if L.ge_tensor_clone(t, ctypes.byref(c)) != L.GE_OK:
                        return 1
                    d[k] = to_numpy(c.value)
                r = fn(int(graph_id), d)
                return int(r or 0)
            except BaseException:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                return 1

        cb = L.CALLBACK_FN(trampoline)
        L.check(reg(self.ptr, L.encode(key), cb, None))
        self._callbacks[key] = cb


# ------------------------------------------------------------------ inference session


class InferenceSession:
    """onnxruntime-shaped: InferenceSession(path_or_bytes, threads=None, precision=None,
    options=None); .run(output_names or None, {name: array}) -> list of numpy arrays."""

    _GRAPH_ID = 0

    def __init__(self, path_or_bytes, threads=None, precision=None, options=None,
                 base_dir=None):
        opts = dict(options or {})
        if threads is not None:
            opts["ge.intraOpThreads"] = str(int(threads))
        if precision not in PRECISION_MODES:
            raise ValueError("ge.InferenceSession: unknown precision %r (one of %s)"
                             % (precision, ", ".join(sorted(k for k in PRECISION_MODES if k))))
        if PRECISION_MODES[precision] is not None:
            opts["ge.exec.precision_mode"] = PRECISION_MODES[precision]
        if hasattr(path_or_bytes, "SerializeToString"):  # an onnx ModelProto
            path_or_bytes = path_or_bytes.SerializeToString()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            graph = Graph.from_bytes(path_or_bytes, base_dir=base_dir)
        else:
            graph = Graph.load(path_or_bytes)
        try:
            self._inputs = graph.inputs
            self._outputs = graph.outputs
            self._session = Session(opts)
            self._session.add_graph(self._GRAPH_ID, graph)
        finally:
            graph.free()
        self._session.build_graph(self._GRAPH_ID)
        self._in_index = {v.name: i for i, v in enumerate(self._inputs)}
        self._out_index = {v.name: i for i, v in enumerate(self._outputs)}

    def get_inputs(self):
        return list(self._inputs)

    def run_stats(self):
        """Session.run_stats of the model's graph."""
        return self._session.run_stats(self._GRAPH_ID)

    def get_outputs(self):
        return list(self._outputs)

    def _ordered_inputs(self, feed):
        if not isinstance(feed, dict):
            raise TypeError("ge.InferenceSession.run: input_feed must be a dict {name: array}")
        unknown = [k for k in feed if k not in self._in_index]
        missing = [v.name for v in self._inputs if v.name not in feed]
        if unknown or missing:
            parts = []
            if unknown:
                parts.append("unknown input name(s) %s" % ", ".join(map(repr, unknown)))
            if missing:
                parts.append("missing input(s) %s" % ", ".join(map(repr, missing)))
            raise ValueError("ge.InferenceSession.run: %s; the model's inputs are %s"
                             % ("; ".join(parts),
                                ", ".join(repr(v.name) for v in self._inputs) or "none"))
        return [feed[v.name] for v in self._inputs]

    def _select(self, output_names):
        if output_names is None:
            return None
        idx = []
        for n in output_names:
            if n not in self._out_index:
                raise ValueError("ge.InferenceSession.run: unknown output name %r; the model's "
                                 "outputs are %s" % (n, ", ".join(repr(v.name)
                                                                  for v in self._outputs)))
            idx.append(self._out_index[n])
        return idx

    def run(self, output_names, input_feed, run_options=None):
        if output_names is None and type(input_feed) is dict and len(input_feed) == len(self._inputs):
            try:  # the common call, with the fewest Python steps (they run cold after a run)
                ins = [input_feed[v.name] for v in self._inputs]
            except KeyError:
                ins = None
            if ins is not None:
                res = self._session._run_fast(self._GRAPH_ID, len(self._outputs), ins)
                if res is not None:
                    return res
        idx = self._select(output_names)
        outs = self._session.run_graph(self._GRAPH_ID, self._ordered_inputs(input_feed))
        return outs if idx is None else [outs[i] for i in idx]

    def run_async(self, output_names, input_feed):
        """A concurrent.futures.Future of run()'s result."""
        idx = self._select(output_names)
        fut = self._session.run_graph_async(self._GRAPH_ID, self._ordered_inputs(input_feed))
        if idx is None:
            return fut
        sel = concurrent.futures.Future()

        def done(f):
            e = f.exception()
            if e is not None:
                sel.set_exception(e)
            else:
                r = f.result()
                sel.set_result([r[i] for i in idx])
        fut.add_done_callback(done)
        return sel

    def close(self):
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
