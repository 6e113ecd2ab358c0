/* ge._gefast: the Python package's run path in C (issue 6).
 *
 * Session.run_graph through ctypes costs a dozen foreign calls and as many small Python
 * objects per run (wrapping each input, reading each output's dtype, rank, dims and data,
 * making a numpy view of it).  After a run has streamed a model's weights through the caches
 * all of that runs cold: about 0.2 ms a run on MobileNetV2 (scratch measurement, the steps
 * timed one by one), some 4% of its run at 2 threads, where onnxruntime's binding spends
 * about 0.1 ms outside its executor.  This module does the same work in one call: the inputs
 * are wrapped (ge_tensor_wrap, no copy), the graph runs with the GIL released, and each output
 * becomes a numpy array over the tensor's memory whose base (a capsule) frees the tensor.
 *
 * run_into does the same for Session.run_graph(..., outputs=arrays): it wraps the caller's output
 * arrays too, and the run writes into them (ge_session_run_graph_into).
 *
 * It takes only the plain case and leaves the rest to the ctypes path, which stays the
 * reference (and the one with the error messages): run() returns None, before anything ran,
 * when an input is not an exact C-contiguous aligned ndarray in native byte order of a builtin
 * numpy dtype ge knows, or not of the dtype the graph declares; an output that is not a tensor of such a
 * dtype (a string, bfloat16 or float8 tensor, a sequence, an optional) comes back as its
 * ge_tensor* address, for the ctypes path to convert.
 *
 * It does not link libge: init() receives the addresses of the functions of the library the
 * ctypes path loaded, so both always call the same library.  Built by CMake where Python's and
 * numpy's headers are found (GE_PYTHON_EXT); python/ge/_lib.py loads it from the library's
 * directory and falls back to the ctypes path when it is missing or does not load. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>

#define GF_MAX_RANK 16 /* GE_MAX_RANK */
#define GF_MAX_IO 256  /* more inputs or outputs: the ctypes path */
#define GF_TYPES 64    /* numpy type numbers and ge dtype codes mapped: the builtin ones */

typedef int (*gf_wrap_fn)(int dt, const int64_t *dims, size_t rank, void *data, size_t nbytes, void *release,
                          void *user, void **out);
typedef void (*gf_free_fn)(void *t);
typedef int (*gf_run_fn)(void *s, uint32_t graph_id, void *const *in, size_t n_in, void **out, size_t n_out);
typedef int (*gf_run_into_fn)(void *s, uint32_t graph_id, void *const *in, size_t n_in, void *const *out,
                              size_t n_out);
typedef int (*gf_int_fn)(const void *t);
typedef size_t (*gf_size_fn)(const void *t);
typedef const int64_t *(*gf_dims_fn)(const void *t);
typedef void *(*gf_data_fn)(const void *t);

static struct {
  gf_wrap_fn wrap;
  gf_free_fn free;
  gf_run_fn run;
  gf_run_into_fn run_into; /* NULL: a library without ge_session_run_graph_into */
  gf_int_fn kind, dtype;
  gf_size_fn rank, nbytes;
  gf_dims_fn dims;
  gf_data_fn data;
  int ge_of_npy[GF_TYPES]; /* -1: not mapped */
  int npy_of_ge[GF_TYPES];
  int ready;
} gf;

/* init(wrap, free, run_graph, kind, dtype, rank, dims, nbytes, data, {ge dtype: numpy type number}
   [, run_graph_into or 0]) */
static PyObject *gf_init(PyObject *self, PyObject *args) {
  (void)self;
  unsigned long long a[9], into = 0;
  PyObject *map;
  if (!PyArg_ParseTuple(args, "KKKKKKKKKO!|K", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8],
                        &PyDict_Type, &map, &into))
    return NULL;
  for (int i = 0; i < 9; i++)
    if (!a[i]) return PyErr_Format(PyExc_ValueError, "ge._gefast.init: function %d is NULL", i);
  for (int i = 0; i < GF_TYPES; i++) gf.ge_of_npy[i] = gf.npy_of_ge[i] = -1;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(map, &pos, &k, &v)) {
    long g = PyLong_AsLong(k), n = PyLong_AsLong(v);
    if (PyErr_Occurred()) return NULL;
    if (g >= 0 && g < GF_TYPES && n >= 0 && n < GF_TYPES) {
      gf.npy_of_ge[g] = (int)n;
      gf.ge_of_npy[n] = (int)g;
    }
  }
  gf.wrap = (gf_wrap_fn)(uintptr_t)a[0];
  gf.free = (gf_free_fn)(uintptr_t)a[1];
  gf.run = (gf_run_fn)(uintptr_t)a[2];
  gf.kind = (gf_int_fn)(uintptr_t)a[3];
  gf.dtype = (gf_int_fn)(uintptr_t)a[4];
  gf.rank = (gf_size_fn)(uintptr_t)a[5];
  gf.dims = (gf_dims_fn)(uintptr_t)a[6];
  gf.nbytes = (gf_size_fn)(uintptr_t)a[7];
  gf.data = (gf_data_fn)(uintptr_t)a[8];
  gf.run_into = (gf_run_into_fn)(uintptr_t)into;
  gf.ready = 1;
  Py_RETURN_NONE;
}

static void free_all(void **t, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++)
    if (t[i]) gf.free(t[i]);
}

/* Array o as a wrapped tensor in *out (no copy); 0 when the fast path does not take it.  want: the
   ge dtype it must have (-1: any); writeable: it is an output the run writes. */
static int wrap_array(PyObject *o, long want, int writeable, void **out) {
  if (!PyArray_CheckExact(o)) return 0;
  PyArrayObject *a = (PyArrayObject *)o;
  int tn = PyArray_TYPE(a), r = PyArray_NDIM(a);
  if (tn < 0 || tn >= GF_TYPES || gf.ge_of_npy[tn] < 0 || (want >= 0 && gf.ge_of_npy[tn] != want) ||
      !(writeable ? PyArray_ISCARRAY(a) : PyArray_ISCARRAY_RO(a)) || !PyArray_ISNOTSWAPPED(a) || r > GF_MAX_RANK)
    return 0;
  int64_t dims[GF_MAX_RANK];
  for (int d = 0; d < r; d++) dims[d] = (int64_t)PyArray_DIM(a, d);
  size_t nb = (size_t)PyArray_NBYTES(a);
  return gf.wrap(gf.ge_of_npy[tn], dims, (size_t)r, nb ? PyArray_DATA(a) : NULL, nb, NULL, NULL, out) == 0;
}

static void capsule_free(PyObject *cap) {
  void *t = PyCapsule_GetPointer(cap, "ge_tensor");
  if (t) gf.free(t);
}

/* Output tensor t (owned) as a numpy array, or its address (an int) for the ctypes path. */
static PyObject *output(void *t) {
  if (!t) Py_RETURN_NONE;
  int dt = gf.dtype(t);
  size_t r = gf.rank(t);
  if (gf.kind(t) != 0 || dt < 0 || dt >= GF_TYPES || gf.npy_of_ge[dt] < 0 || r > GF_MAX_RANK)
    return PyLong_FromVoidPtr(t);
  npy_intp nd[GF_MAX_RANK];
  const int64_t *d = gf.dims(t);
  for (size_t k = 0; k < r; k++) nd[k] = (npy_intp)d[k];
  void *data = gf.data(t);
  if (!data || !gf.nbytes(t)) { /* nothing to view */
    gf.free(t);
    return PyArray_ZEROS((int)r, nd, gf.npy_of_ge[dt], 0);
  }
  PyObject *arr = PyArray_SimpleNewFromData((int)r, nd, gf.npy_of_ge[dt], data);
  if (!arr) {
    gf.free(t);
    return NULL;
  }
  PyObject *cap = PyCapsule_New(t, "ge_tensor", capsule_free);
  if (!cap) {
    Py_DECREF(arr);
    gf.free(t);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) { /* steals cap (freeing t) either way */
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

/* The inputs of a list, as wrapped tensors in tin: 0 (none left wrapped) when one is not taken,
   or when want is neither None nor a tuple of ge dtype codes (-1: any), one per input. */
static int wrap_inputs(PyObject *ins, PyObject *want, void **tin) {
  Py_ssize_t n_in = PyList_GET_SIZE(ins);
  if (n_in > GF_MAX_IO || (want != Py_None && (!PyTuple_Check(want) || PyTuple_GET_SIZE(want) != n_in))) return 0;
  for (Py_ssize_t i = 0; i < n_in; i++) {
    long w = want == Py_None ? -1 : PyLong_AsLong(PyTuple_GET_ITEM(want, i));
    if (w == -1 && PyErr_Occurred()) PyErr_Clear();
    if (!wrap_array(PyList_GET_ITEM(ins, i), w, 0, &tin[i])) {
      free_all(tin, i);
      return 0;
    }
  }
  return 1;
}

/* run(session address, graph id, inputs (a list), number of outputs, declared input dtypes (a
   tuple of ge dtype codes, -1 for any) or None) -> (status, list of outputs) after a run, or
   None when the ctypes path must take the call (nothing ran). */
static PyObject *gf_runf(PyObject *self, PyObject *args) {
  (void)self;
  unsigned long long sp;
  unsigned int gid;
  PyObject *ins, *want;
  Py_ssize_t n_out;
  if (!PyArg_ParseTuple(args, "KIO!nO", &sp, &gid, &PyList_Type, &ins, &n_out, &want)) return NULL;
  Py_ssize_t n_in = PyList_GET_SIZE(ins);
  void *tin[GF_MAX_IO], *tout[GF_MAX_IO];
  if (!gf.ready || !sp || n_out < 0 || n_out > GF_MAX_IO || !wrap_inputs(ins, want, tin)) Py_RETURN_NONE;
  for (Py_ssize_t i = 0; i < n_out; i++) tout[i] = NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS;
  st = gf.run((void *)(uintptr_t)sp, gid, tin, (size_t)n_in, tout, (size_t)n_out);
  Py_END_ALLOW_THREADS;
  free_all(tin, n_in);
  if (st != 0) {
    free_all(tout, n_out);
    return Py_BuildValue("(iO)", st, Py_None);
  }
  PyObject *res = PyList_New(n_out);
  for (Py_ssize_t i = 0; i < n_out; i++) {
    PyObject *o = res ? output(tout[i]) : NULL;
    if (!o) {
      Py_XDECREF(res);
      free_all(tout + i + (res ? 1 : 0), n_out - i - (res ? 1 : 0));
      return NULL;
    }
    PyList_SET_ITEM(res, i, o);
  }
  return Py_BuildValue("(iN)", 0, res);
}

/* run_into(session address, graph id, inputs (a list), outputs (a list of arrays the run writes),
   declared input dtypes or None) -> the run's status, or None when the ctypes path must take the
   call (nothing ran): an input as for run(), or an output that is not an exact C-contiguous,
   aligned, writeable ndarray in native byte order of a builtin dtype ge knows.  The library
   checks each output's dtype and shape against the graph's. */
static PyObject *gf_run_into(PyObject *self, PyObject *args) {
  (void)self;
  unsigned long long sp;
  unsigned int gid;
  PyObject *ins, *outs, *want;
  if (!PyArg_ParseTuple(args, "KIO!O!O", &sp, &gid, &PyList_Type, &ins, &PyList_Type, &outs, &want)) return NULL;
  Py_ssize_t n_in = PyList_GET_SIZE(ins), n_out = PyList_GET_SIZE(outs);
  void *tin[GF_MAX_IO], *tout[GF_MAX_IO];
  if (!gf.ready || !gf.run_into || !sp || n_out > GF_MAX_IO || !wrap_inputs(ins, want, tin)) Py_RETURN_NONE;
  for (Py_ssize_t i = 0; i < n_out; i++)
    if (!wrap_array(PyList_GET_ITEM(outs, i), -1, 1, &tout[i])) {
      free_all(tin, n_in);
      free_all(tout, i);
      Py_RETURN_NONE;
    }
  int st;
  Py_BEGIN_ALLOW_THREADS;
  st = gf.run_into((void *)(uintptr_t)sp, gid, tin, (size_t)n_in, tout, (size_t)n_out);
  Py_END_ALLOW_THREADS;
  free_all(tin, n_in);
  free_all(tout, n_out);
  return PyLong_FromLong(st);
}

static PyMethodDef gf_methods[] = {
    {"init", gf_init, METH_VARARGS, "init(wrap, free, run_graph, kind, dtype, rank, dims, nbytes, data, dtypes)"},
    {"run", gf_runf, METH_VARARGS, "run(session, graph_id, inputs, n_out, want) -> (status, outputs) or None"},
    {"run_into", gf_run_into, METH_VARARGS, "run_into(session, graph_id, inputs, outputs, want) -> status or None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef gf_module = {PyModuleDef_HEAD_INIT, "_gefast", "ge's run path in C", -1, gf_methods,
                                       NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__gefast(void) {
  import_array();
  return PyModule_Create(&gf_module);
}
