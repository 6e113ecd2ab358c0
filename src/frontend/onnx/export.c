/* ONNX export: ge_graph -> ModelProto, packed with protobuf-c.  The protobuf structs point
 * into the graph where they can (names, tensor data); everything else is allocated in a
 * per-export pool freed at the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype_lowp.h"
#include "frontend/onnx/onnx.h"
#include "ge_onnx.pb-c.h"

typedef struct ex {
  void **ptrs;
  size_t n, cap;
} ex;

static void *ex_alloc(ex *e, size_t n, size_t size) {
  size_t bytes;
  if (ge_mul_overflow_size(n ? n : 1, size, &bytes)) return NULL;
  if (e->n == e->cap) {
    size_t nc = e->cap ? e->cap * 2 : 64;
    void **p = realloc(e->ptrs, nc * sizeof *p);
    if (!p) return NULL;
    e->ptrs = p;
    e->cap = nc;
  }
  void *p = calloc(1, bytes);
  if (p) e->ptrs[e->n++] = p;
  return p;
}

static void ex_free(ex *e) {
  for (size_t i = 0; i < e->n; i++) free(e->ptrs[i]);
  free(e->ptrs);
}

#define EX_NEW(e, T) ((T *)ex_alloc((e), 1, sizeof(T)))
#define EX_ARR(e, T, n) ((T *)ex_alloc((e), (n), sizeof(T)))

static ge_status ex_oom(void) {
  return ge_error(GE_ERR_OUT_OF_MEMORY, "ONNX export: out of memory");
}

static char *S(const char *s) { return (char *)(s ? s : ""); }
/* NULL for an empty optional string, so that it is not written */
static char *SO(const char *s) { return (s && *s) ? (char *)s : NULL; }

static const ge_graph *root_of(const ge_graph *g) {
  while (g->parent) g = g->parent;
  return g;
}

/* ------------------------------------------------------------------ tensors and types */

static ge_status ex_tensor(ex *e, const ge_tensor *t, const char *name, GeOnnx__TensorProto **out) {
  GeOnnx__TensorProto *tp = EX_NEW(e, GeOnnx__TensorProto);
  if (!tp) return ex_oom();
  ge_onnx__tensor_proto__init(tp);
  tp->name = SO(name);
  tp->has_data_type = 1;
  tp->data_type = ge_dtype_to_onnx(t->dtype);
  if (t->rank < 0 || t->rank > GE_MAX_RANK)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ONNX export: tensor '%s' has bad rank %d",
                    S(name), (int)t->rank);
  tp->n_dims = (size_t)t->rank;
  tp->dims = (int64_t *)t->dims;
  if (t->dtype == GE_STRING) {
    tp->n_string_data = t->numel;
    tp->string_data = EX_ARR(e, ProtobufCBinaryData, t->numel);
    if (!tp->string_data) return ex_oom();
    char *const *s = t->data;
    for (size_t i = 0; i < t->numel; i++) {
      tp->string_data[i].data = (uint8_t *)(s && s[i] ? s[i] : "");
      tp->string_data[i].len = s && s[i] ? strlen(s[i]) : 0;
    }
  } else if (ge_dtype_lowp_bits(t->dtype) < 8) { /* 4-bit and 2-bit: packed, as ONNX has them */
    size_t fb = 0;
    ge_dtype_packed_nbytes(t->dtype, t->numel, &fb);
    uint8_t *pk = EX_ARR(e, uint8_t, fb ? fb : 1);
    if (!pk) return ex_oom();
    ge_lowp_pack(t->dtype, t->data, t->numel, pk);
    tp->has_raw_data = 1;
    tp->raw_data.len = fb;
    tp->raw_data.data = pk;
  } else {
    tp->has_raw_data = 1;
    tp->raw_data.len = t->nbytes;
    tp->raw_data.data = t->data;
  }
  *out = tp;
  return GE_OK;
}

static ge_status ex_shape(ex *e, const ge_graph *g, const ge_shape *s,
                          GeOnnx__TensorShapeProto **out) {
  *out = NULL;
  if (s->rank < 0) return GE_OK;
  GeOnnx__TensorShapeProto *sp = EX_NEW(e, GeOnnx__TensorShapeProto);
  if (!sp) return ex_oom();
  ge_onnx__tensor_shape_proto__init(sp);
  size_t rank = (size_t)(s->rank > GE_MAX_RANK ? GE_MAX_RANK : s->rank);
  sp->n_dim = rank;
  sp->dim = EX_ARR(e, GeOnnx__TensorShapeProto__Dimension *, rank);
  GeOnnx__TensorShapeProto__Dimension *dims = EX_ARR(e, GeOnnx__TensorShapeProto__Dimension, rank);
  if (!sp->dim || !dims) return ex_oom();
  const ge_graph *r = g ? root_of(g) : NULL;
  for (size_t i = 0; i < rank; i++) {
    GeOnnx__TensorShapeProto__Dimension *d = &dims[i];
    ge_onnx__tensor_shape_proto__dimension__init(d);
    int64_t v = s->dims[i];
    if (v >= 0) {
      d->value_case = GE_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = v;
    } else if (v <= -2 && r && GE_DIM_SYM_ID(v) < r->n_syms && r->syms[GE_DIM_SYM_ID(v)]) {
      d->value_case = GE_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = r->syms[GE_DIM_SYM_ID(v)];
    }
    sp->dim[i] = d;
  }
  *out = sp;
  return GE_OK;
}

static ge_status ex_tensor_type(ex *e, const ge_graph *g, ge_dtype dt, const ge_shape *s,
                                GeOnnx__TypeProto **out) {
  GeOnnx__TypeProto *tp = EX_NEW(e, GeOnnx__TypeProto);
  GeOnnx__TypeProto__Tensor *tt = EX_NEW(e, GeOnnx__TypeProto__Tensor);
  if (!tp || !tt) return ex_oom();
  ge_onnx__type_proto__init(tp);
  ge_onnx__type_proto__tensor__init(tt);
  if (dt < GE_DTYPE_COUNT) {
    tt->has_elem_type = 1;
    tt->elem_type = ge_dtype_to_onnx(dt);
  }
  GE_CHECK(ex_shape(e, g, s, &tt->shape));
  tp->value_case = GE_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  *out = tp;
  return GE_OK;
}

/* NULL (*out) when nothing is known about the type. */
static ge_status ex_type(ex *e, const ge_graph *g, const ge_type *ty, GeOnnx__TypeProto **out) {
  *out = NULL;
  bool known = ty->dtype < GE_DTYPE_COUNT || ty->shape.rank >= 0;
  switch (ty->kind) {
    case GE_TYPE_TENSOR:
      if (!known) return GE_OK;
      return ex_tensor_type(e, g, ty->dtype, &ty->shape, out);
    case GE_TYPE_SEQUENCE:
    case GE_TYPE_OPTIONAL: {
      GeOnnx__TypeProto *elem;
      GE_CHECK(ex_tensor_type(e, g, ty->dtype, &ty->shape, &elem));
      GeOnnx__TypeProto *seq = NULL;
      if (ty->kind == GE_TYPE_SEQUENCE || ty->elem_is_seq) {
        seq = EX_NEW(e, GeOnnx__TypeProto);
        GeOnnx__TypeProto__Sequence *sq = EX_NEW(e, GeOnnx__TypeProto__Sequence);
        if (!seq || !sq) return ex_oom();
        ge_onnx__type_proto__init(seq);
        ge_onnx__type_proto__sequence__init(sq);
        sq->elem_type = elem;
        seq->value_case = GE_ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        seq->sequence_type = sq;
      }
      if (ty->kind == GE_TYPE_SEQUENCE) {
        *out = seq;
        return GE_OK;
      }
      GeOnnx__TypeProto *opt = EX_NEW(e, GeOnnx__TypeProto);
      GeOnnx__TypeProto__Optional *op = EX_NEW(e, GeOnnx__TypeProto__Optional);
      if (!opt || !op) return ex_oom();
      ge_onnx__type_proto__init(opt);
      ge_onnx__type_proto__optional__init(op);
      op->elem_type = seq ? seq : elem;
      opt->value_case = GE_ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
      opt->optional_type = op;
      *out = opt;
      return GE_OK;
    }
    default:
      return GE_OK;
  }
}

static ge_status ex_value_info(ex *e, const ge_graph *g, const ge_value *v,
                               GeOnnx__ValueInfoProto **out) {
  GeOnnx__ValueInfoProto *vi = EX_NEW(e, GeOnnx__ValueInfoProto);
  if (!vi) return ex_oom();
  ge_onnx__value_info_proto__init(vi);
  vi->name = S(v->name);
  vi->doc_string = SO(v->doc);
  GE_CHECK(ex_type(e, g, &v->type, &vi->type));
  *out = vi;
  return GE_OK;
}

/* ------------------------------------------------------------------ graphs */

static ge_status ex_graph(ex *e, const ge_graph *g, int depth, GeOnnx__GraphProto **out);

static ge_status ex_attr(ex *e, const ge_graph *g, const ge_attr_value *a, int depth,
                         GeOnnx__AttributeProto **out) {
  GeOnnx__AttributeProto *ap = EX_NEW(e, GeOnnx__AttributeProto);
  if (!ap) return ex_oom();
  ge_onnx__attribute_proto__init(ap);
  ap->name = S(a->name);
  ap->ref_attr_name = SO(a->ref_attr_name);
  ap->doc_string = SO(a->doc);
  ap->has_type = 1;
  switch (a->kind) {
    case GE_ATTR_KIND_UNDEFINED:
      ap->has_type = 0;
      if (a->type_attr) { /* a TYPE_PROTO attribute */
        ge_type ty = *a->type_attr;
        if (!g) /* no symbol table to name symbolic dims with */
          for (int32_t d = 0; d < ty.shape.rank && d < GE_MAX_RANK; d++)
            if (ty.shape.dims[d] < 0) ty.shape.dims[d] = GE_DIM_UNKNOWN;
        if (ty.kind == GE_TYPE_TENSOR && ty.dtype >= GE_DTYPE_COUNT && ty.shape.rank < 0) {
          /* nothing known: an empty tensor type */
          GE_CHECK(ex_tensor_type(e, g, ty.dtype, &ty.shape, &ap->tp));
        } else {
          GE_CHECK(ex_type(e, g, &ty, &ap->tp));
        }
        ap->has_type = 1;
        ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
      }
      break;
    case GE_ATTR_KIND_FLOAT:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
      ap->has_f = 1;
      ap->f = a->f;
      break;
    case GE_ATTR_KIND_INT:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
      ap->has_i = 1;
      ap->i = a->i;
      break;
    case GE_ATTR_KIND_STRING:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
      ap->has_s = 1;
      ap->s.data = (uint8_t *)S(a->s);
      ap->s.len = a->s ? (a->s_len ? a->s_len : strlen(a->s)) : 0;
      break;
    case GE_ATTR_KIND_TENSOR:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
      if (!a->t) return ge_error(GE_ERR_INVALID_ARGUMENT, "ONNX export: attribute '%s' has no tensor", S(a->name));
      GE_CHECK(ex_tensor(e, a->t, NULL, &ap->t));
      break;
    case GE_ATTR_KIND_GRAPH:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
      if (!a->g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ONNX export: attribute '%s' has no graph", S(a->name));
      GE_CHECK(ex_graph(e, a->g, depth + 1, &ap->g));
      break;
    case GE_ATTR_KIND_FLOATS:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
      ap->n_floats = a->n;
      ap->floats = a->floats;
      break;
    case GE_ATTR_KIND_INTS:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
      ap->n_ints = a->n;
      ap->ints = a->ints;
      break;
    case GE_ATTR_KIND_STRINGS:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
      ap->n_strings = a->n;
      ap->strings = EX_ARR(e, ProtobufCBinaryData, a->n);
      if (!ap->strings) return ex_oom();
      for (size_t i = 0; i < a->n; i++) {
        ap->strings[i].data = (uint8_t *)S(a->strings[i]);
        ap->strings[i].len = a->strings[i] ? strlen(a->strings[i]) : 0;
      }
      break;
    case GE_ATTR_KIND_TENSORS:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
      ap->n_tensors = a->n;
      ap->tensors = EX_ARR(e, GeOnnx__TensorProto *, a->n);
      if (!ap->tensors) return ex_oom();
      for (size_t i = 0; i < a->n; i++) GE_CHECK(ex_tensor(e, a->tensors[i], NULL, &ap->tensors[i]));
      break;
    case GE_ATTR_KIND_GRAPHS:
      ap->type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
      ap->n_graphs = a->n;
      ap->graphs = EX_ARR(e, GeOnnx__GraphProto *, a->n);
      if (!ap->graphs) return ex_oom();
      for (size_t i = 0; i < a->n; i++) GE_CHECK(ex_graph(e, a->graphs[i], depth + 1, &ap->graphs[i]));
      break;
    default:
      return ge_error(GE_ERR_INVALID_ARGUMENT, "ONNX export: attribute '%s' has unknown kind %d",
                      S(a->name), (int)a->kind);
  }
  *out = ap;
  return GE_OK;
}

static const char *vname(const ge_graph *g, int32_t id) {
  if (id < 0 || (size_t)id >= g->n_values) return "";
  return S(g->values[id].name);
}

static ge_status ex_nodes(ex *e, const ge_graph *g, int depth, size_t *n_out,
                          GeOnnx__NodeProto ***out) {
  GeOnnx__NodeProto **nodes = EX_ARR(e, GeOnnx__NodeProto *, g->n_nodes);
  if (!nodes) return ex_oom();
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    GeOnnx__NodeProto *np = EX_NEW(e, GeOnnx__NodeProto);
    if (!np) return ex_oom();
    ge_onnx__node_proto__init(np);
    np->name = SO(n->name);
    np->op_type = S(n->op_type);
    np->domain = SO(n->domain);
    np->doc_string = SO(n->doc);
    np->n_input = n->n_inputs;
    np->input = EX_ARR(e, char *, n->n_inputs);
    np->n_output = n->n_outputs;
    np->output = EX_ARR(e, char *, n->n_outputs);
    np->n_attribute = n->n_attrs;
    np->attribute = EX_ARR(e, GeOnnx__AttributeProto *, n->n_attrs);
    if (!np->input || !np->output || !np->attribute) return ex_oom();
    for (size_t k = 0; k < n->n_inputs; k++) np->input[k] = (char *)vname(g, n->inputs[k]);
    for (size_t k = 0; k < n->n_outputs; k++) np->output[k] = (char *)vname(g, n->outputs[k]);
    for (size_t k = 0; k < n->n_attrs; k++) {
      ge_status st = ex_attr(e, g, &n->attrs[k], depth, &np->attribute[k]);
      if (st != GE_OK) {
        char desc[320];
        return ge_error_prefix(st, "%s: ", ge_node_desc(n, desc, sizeof desc));
      }
    }
    nodes[i] = np;
  }
  *n_out = g->n_nodes;
  *out = nodes;
  return GE_OK;
}

static bool is_listed(const int32_t *ids, size_t n, int32_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

static ge_status ex_graph(ex *e, const ge_graph *g, int depth, GeOnnx__GraphProto **out) {
  if (depth > GE_ONNX_MAX_SUBGRAPH_DEPTH)
    return ge_error(GE_ERR_UNSUPPORTED, "ONNX export: subgraphs nested deeper than %d levels",
                    GE_ONNX_MAX_SUBGRAPH_DEPTH);
  GeOnnx__GraphProto *gp = EX_NEW(e, GeOnnx__GraphProto);
  if (!gp) return ex_oom();
  ge_onnx__graph_proto__init(gp);
  gp->name = S(g->name);
  if (g->parent) gp->doc_string = SO(g->doc); /* the top graph's doc is the model's */
  GE_CHECK(ex_nodes(e, g, depth, &gp->n_node, &gp->node));

  /* initializers: every constant, in value order */
  size_t n_const = 0;
  for (size_t i = 0; i < g->n_values; i++)
    if (g->values[i].kind == GE_VALUE_CONSTANT && g->values[i].constant) n_const++;
  gp->initializer = EX_ARR(e, GeOnnx__TensorProto *, n_const);
  if (!gp->initializer) return ex_oom();
  for (size_t i = 0; i < g->n_values; i++) {
    const ge_value *v = &g->values[i];
    if (v->kind != GE_VALUE_CONSTANT || !v->constant) continue;
    GeOnnx__TensorProto *tp;
    GE_CHECK(ex_tensor(e, v->constant, v->name, &tp));
    if (!is_listed(g->inputs, g->n_inputs, (int32_t)i)) tp->doc_string = SO(v->doc);
    gp->initializer[gp->n_initializer++] = tp;
  }

  gp->n_input = g->n_inputs;
  gp->input = EX_ARR(e, GeOnnx__ValueInfoProto *, g->n_inputs);
  gp->n_output = g->n_outputs;
  gp->output = EX_ARR(e, GeOnnx__ValueInfoProto *, g->n_outputs);
  if (!gp->input || !gp->output) return ex_oom();
  for (size_t i = 0; i < g->n_inputs; i++) {
    int32_t id = g->inputs[i];
    if (id < 0 || (size_t)id >= g->n_values)
      return ge_error(GE_ERR_INVALID_ARGUMENT, "ONNX export: graph '%s' input %zu is invalid",
                      S(g->name), i);
    GE_CHECK(ex_value_info(e, g, &g->values[id], &gp->input[i]));
  }
  for (size_t i = 0; i < g->n_outputs; i++) {
    int32_t id = g->outputs[i];
    if (id < 0 || (size_t)id >= g->n_values)
      return ge_error(GE_ERR_INVALID_ARGUMENT, "ONNX export: graph '%s' output %zu is invalid",
                      S(g->name), i);
    GE_CHECK(ex_value_info(e, g, &g->values[id], &gp->output[i]));
    /* a doc on a constant output is written with its initializer, not here */
    if (g->values[id].kind != GE_VALUE_INTERMEDIATE) gp->output[i]->doc_string = NULL;
  }

  /* value_info: typed intermediates that are not outputs */
  size_t n_vi = 0;
  for (size_t i = 0; i < g->n_values; i++) {
    const ge_value *v = &g->values[i];
    if (v->kind == GE_VALUE_INTERMEDIATE && v->type.kind != GE_TYPE_UNKNOWN &&
        (v->type.dtype < GE_DTYPE_COUNT || v->type.shape.rank >= 0))
      n_vi++;
  }
  gp->value_info = EX_ARR(e, GeOnnx__ValueInfoProto *, n_vi);
  if (!gp->value_info) return ex_oom();
  for (size_t i = 0; i < g->n_values; i++) {
    const ge_value *v = &g->values[i];
    if (!(v->kind == GE_VALUE_INTERMEDIATE && v->type.kind != GE_TYPE_UNKNOWN &&
          (v->type.dtype < GE_DTYPE_COUNT || v->type.shape.rank >= 0)))
      continue;
    if (is_listed(g->outputs, g->n_outputs, (int32_t)i)) continue;
    GeOnnx__ValueInfoProto *vi;
    GE_CHECK(ex_value_info(e, g, v, &vi));
    if (vi->type) gp->value_info[gp->n_value_info++] = vi;
  }
  *out = gp;
  return GE_OK;
}

/* ------------------------------------------------------------------ model */

static ge_status ex_opsets(ex *e, const ge_opset *o, size_t n, bool add_default,
                           size_t *n_out, GeOnnx__OperatorSetIdProto ***out) {
  bool has_onnx = false;
  for (size_t i = 0; i < n; i++)
    if (!o[i].domain || !*o[i].domain || strcmp(o[i].domain, "ai.onnx") == 0) has_onnx = true;
  size_t total = n + (add_default && !has_onnx ? 1 : 0);
  GeOnnx__OperatorSetIdProto **arr = EX_ARR(e, GeOnnx__OperatorSetIdProto *, total);
  GeOnnx__OperatorSetIdProto *items = EX_ARR(e, GeOnnx__OperatorSetIdProto, total);
  if (!arr || !items) return ex_oom();
  for (size_t i = 0; i < total; i++) {
    ge_onnx__operator_set_id_proto__init(&items[i]);
    items[i].has_version = 1;
    if (i < n) {
      const char *d = o[i].domain ? o[i].domain : "";
      items[i].domain = (char *)(strcmp(d, "ai.onnx") == 0 ? "" : d);
      items[i].version = o[i].version;
    } else {
      items[i].domain = (char *)"";
      items[i].version = GE_ONNX_OPSET_MAX;
    }
    arr[i] = &items[i];
  }
  *n_out = total;
  *out = arr;
  return GE_OK;
}

static ge_status ex_function(ex *e, const ge_function *f, GeOnnx__FunctionProto **out) {
  GeOnnx__FunctionProto *fp = EX_NEW(e, GeOnnx__FunctionProto);
  if (!fp) return ex_oom();
  ge_onnx__function_proto__init(fp);
  fp->name = S(f->name);
  fp->domain = S(f->domain);
  fp->overload = SO(f->overload);
  fp->n_input = f->n_inputs;
  fp->input = f->inputs;
  fp->n_output = f->n_outputs;
  fp->output = f->outputs;
  fp->n_attribute = f->n_attr_names;
  fp->attribute = f->attr_names;
  GE_CHECK(ex_opsets(e, f->opsets, f->n_opsets, false, &fp->n_opset_import, &fp->opset_import));
  if (f->body) GE_CHECK(ex_nodes(e, f->body, 1, &fp->n_node, &fp->node));
  fp->n_attribute_proto = f->n_attr_defaults;
  fp->attribute_proto = EX_ARR(e, GeOnnx__AttributeProto *, f->n_attr_defaults);
  if (!fp->attribute_proto) return ex_oom();
  for (size_t i = 0; i < f->n_attr_defaults; i++)
    GE_CHECK(ex_attr(e, f->body, &f->attr_defaults[i], 1, &fp->attribute_proto[i]));
  *out = fp;
  return GE_OK;
}

/* The lowest IR version that can carry an ai.onnx opset. */
static int64_t ir_for_opset(int64_t opset) {
  if (opset >= 25) return 12;
  if (opset >= 23) return 11;
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  return 8;
}

static ge_status ex_model(ex *e, const ge_graph *g, GeOnnx__ModelProto *mp) {
  ge_onnx__model_proto__init(mp);
  int64_t opset = 0;
  for (size_t i = 0; i < g->n_opsets; i++)
    if (!g->opsets[i].domain || !*g->opsets[i].domain) opset = g->opsets[i].version;
  if (!opset) opset = GE_ONNX_OPSET_MAX;
  mp->has_ir_version = 1;
  mp->ir_version = g->ir_version > 0 ? g->ir_version : 10;
  if (g->ir_version <= 0 && ir_for_opset(opset) > mp->ir_version)
    mp->ir_version = ir_for_opset(opset);
  mp->producer_name = g->producer_name ? g->producer_name : (char *)"ge";
  mp->producer_version = g->producer_version ? g->producer_version : (char *)ge_version();
  mp->domain = SO(g->model_domain);
  if (g->model_version) {
    mp->has_model_version = 1;
    mp->model_version = g->model_version;
  }
  mp->doc_string = SO(g->doc);
  GE_CHECK(ex_opsets(e, g->opsets, g->n_opsets, true, &mp->n_opset_import, &mp->opset_import));
  GE_CHECK(ex_graph(e, g, 0, &mp->graph));
  mp->n_metadata_props = g->n_meta;
  mp->metadata_props = EX_ARR(e, GeOnnx__StringStringEntryProto *, g->n_meta);
  GeOnnx__StringStringEntryProto *kv = EX_ARR(e, GeOnnx__StringStringEntryProto, g->n_meta);
  if (!mp->metadata_props || !kv) return ex_oom();
  for (size_t i = 0; i < g->n_meta; i++) {
    ge_onnx__string_string_entry_proto__init(&kv[i]);
    kv[i].key = S(g->meta_keys[i]);
    kv[i].value = S(g->meta_values[i]);
    mp->metadata_props[i] = &kv[i];
  }
  mp->n_functions = g->n_functions;
  mp->functions = EX_ARR(e, GeOnnx__FunctionProto *, g->n_functions);
  if (!mp->functions) return ex_oom();
  for (size_t i = 0; i < g->n_functions; i++)
    GE_CHECK(ex_function(e, &g->functions[i], &mp->functions[i]));
  return GE_OK;
}

ge_status ge_onnx_export(const ge_graph *g, void **out_data, size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  /* weights dropped from memory after packing are read back for as long as we read them */
  GE_CHECK(ge_graph_pin_constants(g, false));
  ex e = {0};
  GeOnnx__ModelProto mp;
  ge_status st = ex_model(&e, g, &mp);
  if (st == GE_OK) {
    size_t n = ge_onnx__model_proto__get_packed_size(&mp);
    if (n > (size_t)INT32_MAX) {
      st = ge_error(GE_ERR_UNSUPPORTED,
                    "ONNX export: the model would be %zu bytes; ONNX protobuf files are limited "
                    "to 2 GiB (external data is not written yet)",
                    n);
    } else {
      uint8_t *buf = malloc(n ? n : 1);
      if (!buf) {
        st = ex_oom();
      } else {
        size_t w = ge_onnx__model_proto__pack(&mp, buf);
        if (w != n) {
          free(buf);
          st = ge_error(GE_ERR_INTERNAL, "ONNX export: packed %zu bytes, expected %zu", w, n);
        } else {
          *out_data = buf;
          *out_size = n;
        }
      }
    }
  }
  ex_free(&e);
  ge_graph_unpin_constants(g, false);
  return st;
}

ge_status ge_graph_save(const ge_graph *g, const char *path) {
  if (!g || !path || !*path)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_save: NULL graph or empty path");
  void *data;
  size_t size;
  ge_status st = ge_onnx_export(g, &data, &size);
  if (st != GE_OK) return ge_error_prefix(st, "%s: ", path);
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = ge_error(GE_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    free(data);
    return st;
  }
  size_t w = fwrite(data, 1, size, f);
  int err = ferror(f);
  int cl = fclose(f);
  free(data);
  if (w != size || err || cl != 0)
    return ge_error(GE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  return GE_OK;
}
