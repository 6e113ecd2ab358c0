/* Float16 and bfloat16 regions computed in float32.
 *
 * ge has no float16 kernels on the CPU, and its bfloat16 ones are the precision modes' (float32
 * values, bf16 compute): a node whose float tensors are float16 or bfloat16 runs on the
 * reference kernel, which converts in and out around a scalar float32 computation (ResNet-50
 * stored in float16 took about 950 ms a run at 1 thread; onnxruntime ran it in 128).
 *
 * This pass gives such nodes float32 tensors: a node of the list below whose outputs are all
 * of one 16-bit float type D is replaced by the same node on float32 values.  Each input of
 * type D becomes a float32 one (a constant is converted once, here; any other value through a
 * Cast, shared by its readers), and each output is a new float32 value, turned back into the
 * original D value by a Cast for whoever still reads it as D (graph outputs, nodes that stay).
 * A value between two converted nodes is read as float32 directly: the region computes in
 * float32 from end to end, its intermediate values are not rounded to D between its ops, and
 * its results are rounded where the region ends.  The float32 passes and kernels then take the
 * region as they take any float32 graph (folding, fusions, layouts, Winograd, oneDNN, the
 * precision modes).  `ge.passes.disable=f16_compute` keeps every node in its own type.
 *
 * Only ONNX ops whose float16 meaning is "the float32 computation, rounded" are listed: the
 * arithmetic, activation, normalisation, pooling, matrix and data-movement ops.  Nodes inside
 * subgraph bodies are left as they are. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

#define F16_MAX_IO 64 /* a node with more inputs or outputs keeps its type */

static const char *const k_ops[] = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "InstanceNormalization",
    "LayerNormalization", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
    "Clip", "Elu", "Selu", "Softplus", "Gelu", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs",
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "MaxPool", "AveragePool",
    "GlobalAveragePool", "GlobalMaxPool", "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum",
    "ReduceMax", "ReduceMin", "Reshape", "Flatten", "Transpose", "Concat", "Squeeze", "Unsqueeze",
    "Identity", "Slice", "Split", "Gather", "Resize", "Pad", "Expand", "Tile", "Where", "DepthToSpace",
    "SpaceToDepth"};

static bool listed(const ge_node *n) {
  if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return false;
  for (size_t i = 0; i < sizeof k_ops / sizeof *k_ops; i++)
    if (!strcmp(n->op_type, k_ops[i])) return true;
  return false;
}

static bool is16(ge_dtype d) { return d == GE_F16 || d == GE_BF16; }

/* The 16-bit float type every present output of n has (GE_DTYPE_COUNT: none, or mixed). */
static ge_dtype outputs16(const ge_edit *e, const ge_node *n) {
  ge_dtype d = GE_DTYPE_COUNT;
  size_t present = 0;
  for (size_t o = 0; o < n->n_outputs; o++) {
    if (n->outputs[o] < 0) continue;
    const ge_type *t = ge_edit_type(e, n->outputs[o]);
    if (t->kind != GE_TYPE_TENSOR || !is16(t->dtype) || (present && t->dtype != d)) return GE_DTYPE_COUNT;
    d = t->dtype;
    present++;
  }
  return present ? d : GE_DTYPE_COUNT;
}

static ge_status const_to_f32(ge_edit *e, const char *base, const ge_tensor *t, int32_t *id) {
  ge_tensor *c = NULL;
  GE_CHECK(ge_tensor_create(GE_F32, t->dims, (size_t)t->rank, &c));
  const uint16_t *s = t->data;
  float *d = c->data;
  for (size_t i = 0; i < t->numel; i++) d[i] = t->dtype == GE_F16 ? ge_f16_to_f32(s[i]) : ge_bf16_to_f32(s[i]);
  char nm[256];
  snprintf(nm, sizeof nm, "%s_f32", base);
  return ge_edit_add_constant(e, nm, c, id);
}

static ge_status add_cast(ge_edit *e, const char *base, int32_t from, int32_t to, ge_dtype dt) {
  int32_t in[1] = {from}, out[1] = {to}, id;
  char nm[256];
  snprintf(nm, sizeof nm, "%s_cast", base);
  GE_CHECK(ge_edit_add_node(e, "Cast", "", nm, in, 1, out, 1, &id));
  return ge_edit_set_attr_int(&e->g->nodes[id], "to", ge_dtype_to_onnx(dt));
}

/* The float32 version of value v (of 16-bit type d), made once. */
static ge_status f32_of(ge_edit *e, int32_t *map, int32_t v, ge_dtype d, int32_t *out) {
  if (map[v] >= 0) {
    *out = map[v];
    return GE_OK;
  }
  char base[200];
  snprintf(base, sizeof base, "%s", e->g->values[v].name ? e->g->values[v].name : "value");
  const ge_tensor *t = ge_edit_const(e, v);
  int32_t id = -1;
  if (t && t->dtype == d && t->data) {
    GE_CHECK(const_to_f32(e, base, t, &id));
  } else {
    char nm[256];
    snprintf(nm, sizeof nm, "%s_f32", base);
    GE_CHECK(ge_edit_new_value(e, nm, &id));
    GE_CHECK(add_cast(e, nm, v, id, GE_F32));
  }
  map[v] = id;
  *out = id;
  return GE_OK;
}

ge_status ge_pass_f16_compute(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  (void)c;
  size_t n0 = g->n_nodes, nv0 = g->n_values;
  bool any = false;
  for (size_t ni = 0; ni < n0 && !any; ni++) any = listed(&g->nodes[ni]);
  if (!any) return GE_OK;
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  int32_t *map = malloc((nv0 + 1) * sizeof *map);
  if (!map) {
    ge_edit_abort(&e);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in pass f16_compute");
  }
  for (size_t v = 0; v < nv0; v++) map[v] = -1;
  ge_status st = GE_OK;
  int32_t in[F16_MAX_IO], out[F16_MAX_IO];
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    const ge_node *n = &g->nodes[ni];
    if (e.dead[ni] || !listed(n) || n->n_inputs > F16_MAX_IO || n->n_outputs > F16_MAX_IO)
      continue;
    ge_dtype d = outputs16(&e, n);
    if (d == GE_DTYPE_COUNT) continue;
    /* the float inputs: of type d, or float32 (Resize's scales); nothing of another float type */
    bool ok = true;
    for (size_t k = 0; k < n->n_inputs && ok; k++) {
      if (n->inputs[k] < 0) continue;
      const ge_type *t = ge_edit_type(&e, n->inputs[k]);
      if (t->kind != GE_TYPE_TENSOR || t->dtype == GE_DTYPE_COUNT) ok = false;
      else if (ge_dtype_is_float(t->dtype) && t->dtype != d && t->dtype != GE_F32) ok = false;
    }
    if (!ok) continue;
    size_t nin = n->n_inputs, nout = n->n_outputs;
    for (size_t k = 0; k < nin && st == GE_OK; k++) {
      int32_t v = g->nodes[ni].inputs[k];
      in[k] = v;
      if (v >= 0 && (size_t)v < nv0 && ge_edit_type(&e, v)->dtype == d) st = f32_of(&e, map, v, d, &in[k]);
    }
    for (size_t o = 0; o < nout && st == GE_OK; o++) {
      int32_t v = g->nodes[ni].outputs[o];
      out[o] = -1;
      if (v < 0) continue;
      char nm[256];
      snprintf(nm, sizeof nm, "%s_f32", g->values[v].name ? g->values[v].name : "value");
      st = ge_edit_new_value(&e, nm, &out[o]);
    }
    if (st != GE_OK) break;
    ge_edit_kill(&e, (int32_t)ni);
    int32_t id = -1;
    st = ge_edit_add_node(&e, g->nodes[ni].op_type, g->nodes[ni].domain, g->nodes[ni].name, in, nin, out, nout, &id);
    if (st == GE_OK) st = ge_edit_copy_attrs(&g->nodes[id], &g->nodes[ni]);
    for (size_t o = 0; o < nout && st == GE_OK; o++) {
      int32_t v = g->nodes[ni].outputs[o];
      if (v < 0) continue;
      if ((size_t)v < nv0) map[v] = out[o];
      st = add_cast(&e, g->values[out[o]].name, out[o], v, d); /* dce drops it when nothing reads v */
    }
    *changed = true;
  }
  free(map);
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
