"""numpy <-> ge_tensor conversion.

Inputs: a C-contiguous array whose dtype ge knows is wrapped without copying (ge_tensor_wrap,
no release callback); the returned `CTensor` keeps the array alive and frees the C tensor
before letting the array go.  String arrays are copied into a GE_STRING tensor.

Outputs: `to_numpy(ptr)` takes ownership of a ge_tensor and returns a numpy array viewing its
data; the array's base chain ends in a `_TensorOwner` that calls ge_tensor_free when the last
view dies.  String outputs become object arrays of str (copied, the tensor freed at once).
"""

import ctypes

import numpy as np

from . import _lib as L


class CTensor:
    """An owned ge_tensor* made from a numpy array (plus what keeps its memory alive)."""

    __slots__ = ("ptr", "_keep")

    def __init__(self, ptr, keep):
        self.ptr = ptr
        self._keep = keep

    def free(self):
        p, self.ptr = self.ptr, None
        if p:
            L.ge_tensor_free(p)
        self._keep = None  # only after the C tensor is gone

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass


def _dims(shape):
    rank = len(shape)
    if rank > 16:
        raise ValueError("ge: rank %d is above GE_MAX_RANK (16)" % rank)
    return (ctypes.c_int64 * max(rank, 1))(*shape), rank


def from_numpy(arr, what="tensor"):
    """A CTensor for `arr` (zero-copy when it is C-contiguous with a dtype ge knows)."""
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)
    dt = L.ge_dtype_of(arr.dtype)
    dims, rank = _dims(arr.shape)
    out = ctypes.c_void_p()
    if dt == L.GE_STRING:
        L.check(L.ge_tensor_create(dt, dims, rank, ctypes.byref(out)), what)
        t = CTensor(out.value, None)
        for i, s in enumerate(arr.reshape(-1)):
            if s is None:
                continue
            if isinstance(s, bytes):
                b = s
            else:
                b = str(s).encode("utf-8")
            L.check(L.ge_tensor_set_string(t.ptr, i, b), what)
        return t
    if not arr.flags.c_contiguous or not arr.flags.aligned:
        arr = np.ascontiguousarray(arr)
    data = arr.ctypes.data if arr.size else None
    L.check(L.ge_tensor_wrap(dt, dims, rank, data, arr.nbytes, L.RELEASE_FN(), None,
                             ctypes.byref(out)), what)
    return CTensor(out.value, arr)


def from_value(val, what="value", elem_dtype=None):
    """A CTensor for a numpy array, a sequence (list/tuple of arrays) or an empty optional
    (None).  elem_dtype: a numpy dtype for empty sequences and optionals (default float32)."""
    if val is not None and not isinstance(val, (list, tuple)):
        return from_numpy(val, what)
    if L.ge_tensor_kind is None:
        raise L.Unsupported("ge: this library cannot pass sequences or optionals",
                            L.GE_ERR_UNSUPPORTED)
    out = ctypes.c_void_p()
    if val is None:
        dt = L.ge_dtype_of(np.dtype(elem_dtype if elem_dtype is not None else np.float32))
        L.check(L.ge_optional_create(dt, None, ctypes.byref(out)), what)
        return CTensor(out.value, None)
    items = [x if isinstance(x, np.ndarray) else np.asarray(x, dtype=elem_dtype) for x in val]
    first = items[0].dtype if items else np.dtype(elem_dtype if elem_dtype is not None else np.float32)
    L.check(L.ge_sequence_create(L.ge_dtype_of(first), ctypes.byref(out)), what)
    seq = CTensor(out.value, None)
    try:
        for x in items:
            t = from_numpy(x, what)
            try:
                L.check(L.ge_sequence_append(seq.ptr, t.ptr), what)
            finally:
                t.free()
    except BaseException:
        seq.free()
        raise
    return seq


def _clone_value(ptr):
    out = ctypes.c_void_p()
    L.check(L.ge_value_clone(ptr, ctypes.byref(out)), "copying an output")
    return out.value


class _TensorOwner:
    """Owns a ge_tensor*; exposes its bytes through the array interface."""

    __slots__ = ("ptr", "__array_interface__")

    def __init__(self, ptr, nbytes, data):
        self.ptr = ptr
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (data, False)}

    def __del__(self):
        p, self.ptr = self.ptr, None
        if p:
            try:
                L.ge_tensor_free(p)
            except Exception:
                pass


def tensor_shape(ptr):
    rank = L.ge_tensor_rank(ptr)
    if rank == 0:
        return ()
    dims = L.ge_tensor_dims(ptr)
    return tuple(int(dims[i]) for i in range(rank))


def to_numpy(ptr):
    """Takes ownership of the ge_tensor* `ptr` and returns a numpy array (zero-copy)."""
    owned = True
    try:
        kind = L.ge_tensor_kind(ptr) if L.ge_tensor_kind is not None else L.GE_KIND_TENSOR
        if kind == L.GE_KIND_SEQUENCE:
            return [to_numpy(_clone_value(L.ge_sequence_at(ptr, i)))
                    for i in range(L.ge_sequence_length(ptr))]
        if kind == L.GE_KIND_OPTIONAL:
            v = L.ge_optional_value(ptr)
            return None if not v else to_numpy(_clone_value(v))
        dt = L.ge_tensor_dtype(ptr)
        shape = tensor_shape(ptr)
        if dt == L.GE_STRING:
            n = L.ge_tensor_numel(ptr)
            data = L.ge_tensor_data(ptr)
            out = np.empty(n, dtype=object)
            if n:
                strs = ctypes.cast(data, ctypes.POINTER(ctypes.c_char_p))
                for i in range(n):
                    s = strs[i]
                    out[i] = s.decode("utf-8", "surrogateescape") if s is not None else ""
            return out.reshape(shape)
        npdt = L.np_dtype(dt)
        nbytes = L.ge_tensor_nbytes(ptr)
        data = L.ge_tensor_data(ptr)
        if nbytes == 0 or not data:
            return np.zeros(shape, dtype=npdt)
        owner = _TensorOwner(ptr, nbytes, data)  # from here on, the owner frees the tensor
        owned = False
        return np.asarray(owner).view(npdt).reshape(shape)
    finally:
        if owned:
            L.ge_tensor_free(ptr)


def free_outputs(ptrs):
    for p in ptrs:
        if p:
            L.ge_tensor_free(p)


def outputs_to_numpy(ptr_array, n):
    """Converts n owned ge_tensor* from a C array; frees the rest if one conversion fails."""
    ptrs = [ptr_array[i] for i in range(n)]
    res = []
    for i, p in enumerate(ptrs):
        if not p:
            res.append(None)
            continue
        try:
            res.append(to_numpy(p))
        except BaseException:
            free_outputs(ptrs[i + 1:])
            raise
    return res
