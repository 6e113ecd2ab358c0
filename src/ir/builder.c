/* The public graph builder and introspection functions of ge.h. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

ge_status ge_graph_create(const char *name, ge_graph **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_create: out is NULL");
  *out = NULL;
  ge_graph *g = ge_graph_new(name ? name : "graph", NULL);
  if (!g) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_graph_create: out of memory");
  ge_status st = ge_graph_set_opset_version(g, "", GE_ONNX_OPSET_MAX);
  if (st == GE_OK) st = ge_graph_set_opset_version(g, "ai.ge", 1);
  if (st != GE_OK) {
    ge_graph_free(g);
    return st;
  }
  *out = g;
  return GE_OK;
}

static ge_status append_id(int32_t **arr, size_t *n, int32_t id) {
  int32_t *p = realloc(*arr, (*n + 1) * sizeof *p);
  if (!p) return ge_error(GE_ERR_OUT_OF_MEMORY, "graph: out of memory");
  p[(*n)++] = id;
  *arr = p;
  return GE_OK;
}

static const char *gname(const ge_graph *g) { return g->name ? g->name : ""; }

/* A value of this name exists and is already defined (input, constant, produced, outer). */
static bool value_defined(const ge_value *v) {
  return v->kind != GE_VALUE_INTERMEDIATE || v->producer >= 0;
}

ge_status ge_graph_add_input(ge_graph *g, const char *name, ge_dtype dt, const int64_t *dims,
                             size_t rank) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_add_input: NULL graph");
  if (!name || !name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': an input needs a name", gname(g));
  if ((int)dt < 0 || dt >= GE_DTYPE_COUNT)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': input '%s': invalid dtype %d", gname(g),
                    name, (int)dt);
  if (rank > GE_MAX_RANK)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': input '%s': rank %zu exceeds %d",
                    gname(g), name, rank, GE_MAX_RANK);
  if (rank && !dims)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': input '%s': dims is NULL for rank %zu",
                    gname(g), name, rank);
  for (size_t i = 0; i < rank; i++)
    if (dims[i] < -1)
      return ge_error(GE_ERR_INVALID_ARGUMENT,
                      "graph '%s': input '%s': dim %zu is %lld (use -1 for a dynamic dimension)",
                      gname(g), name, i, (long long)dims[i]);
  int32_t id = ge_graph_find_value(g, name);
  if (id >= 0 && value_defined(&g->values[id]))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': input '%s' is already defined", gname(g),
                    name);
  if (id < 0) GE_CHECK(ge_graph_value(g, name, &id));
  GE_CHECK(append_id(&g->inputs, &g->n_inputs, id));
  ge_value *v = &g->values[id];
  v->kind = GE_VALUE_INPUT;
  memset(&v->type, 0, sizeof v->type);
  v->type.kind = GE_TYPE_TENSOR;
  v->type.dtype = dt;
  v->type.shape.rank = (int32_t)rank;
  for (size_t i = 0; i < rank; i++) v->type.shape.dims[i] = dims[i] < 0 ? GE_DIM_UNKNOWN : dims[i];
  return GE_OK;
}

/* Makes value `id` of g (-1: a new value `name`) a tensor value of the given kind holding
   copy, which it takes (freed on failure). */
static ge_status set_tensor_value(ge_graph *g, const char *name, int32_t id, ge_value_kind kind,
                                  ge_tensor *copy) {
  if (id < 0) {
    ge_status st = ge_graph_value(g, name, &id);
    if (st != GE_OK) {
      ge_tensor_free(copy);
      return st;
    }
  }
  ge_value_set_tensor(&g->values[id], kind, copy);
  return GE_OK;
}

void ge_value_set_tensor(ge_value *v, ge_value_kind kind, ge_tensor *t) {
  v->kind = kind;
  v->constant = t;
  memset(&v->type, 0, sizeof v->type);
  v->type.kind = GE_TYPE_TENSOR;
  v->type.dtype = t->dtype;
  ge_tensor_shape(t, &v->type.shape);
}

ge_status ge_graph_add_constant(ge_graph *g, const char *name, const ge_tensor *value) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_add_constant: NULL graph");
  if (!name || !name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': a constant needs a name", gname(g));
  if (!value)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': constant '%s': value is NULL", gname(g),
                    name);
  int32_t id = ge_graph_find_value(g, name);
  /* A constant may give an existing input a default value (ONNX initializer of an input). */
  if (id >= 0 && value_defined(&g->values[id]) && g->values[id].kind != GE_VALUE_INPUT)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': constant '%s' is already defined",
                    gname(g), name);
  ge_tensor *copy;
  GE_CHECK(ge_tensor_clone(value, &copy));
  ge_status sst = ge_tensor_make_shared(copy); /* clones of the graph share the values */
  if (sst != GE_OK) {
    ge_tensor_free(copy);
    return sst;
  }
  return set_tensor_value(g, name, id, GE_VALUE_CONSTANT, copy);
}

ge_status ge_graph_add_variable(ge_graph *g, const char *name, const ge_tensor *initial) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_add_variable: NULL graph");
  if (!name || !name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': a variable needs a name", gname(g));
  if (!initial)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': variable '%s': initial value is NULL",
                    gname(g), name);
  if (initial->dtype == GE_STRING)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': variable '%s': string variables are "
                    "not supported", gname(g), name);
  int32_t id = ge_graph_find_value(g, name);
  if (id >= 0 && value_defined(&g->values[id]))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': variable '%s' is already defined",
                    gname(g), name);
  ge_tensor *copy;
  GE_CHECK(ge_tensor_clone(initial, &copy));
  return set_tensor_value(g, name, id, GE_VALUE_VARIABLE, copy);
}

ge_status ge_graph_add_node(ge_graph *g, const char *op_type, const char *name,
                            const char *const *inputs, size_t n_in, const char *const *outputs,
                            size_t n_out, const ge_attr *attrs, size_t n_attrs) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_add_node: NULL graph");
  if (!op_type || !op_type[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': node '%s' has no op type", gname(g),
                    name ? name : "");
  const char *nm = name ? name : "";
  if ((n_in && !inputs) || (n_out && !outputs) || (n_attrs && !attrs))
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "graph '%s': node '%s' (%s): NULL %s array with a non-zero count", gname(g), nm,
                    op_type, n_in && !inputs ? "inputs" : n_out && !outputs ? "outputs" : "attrs");
  /* "domain::Op" */
  char *domain = NULL;
  const char *op = op_type;
  const char *sep = strstr(op_type, "::");
  if (sep) {
    size_t dl = (size_t)(sep - op_type);
    domain = malloc(dl + 1);
    if (!domain) return ge_error(GE_ERR_OUT_OF_MEMORY, "graph: out of memory");
    memcpy(domain, op_type, dl);
    domain[dl] = '\0';
    op = sep + 2;
    if (!op[0]) {
      free(domain);
      return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': node '%s': op type '%s' has no op name",
                      gname(g), nm, op_type);
    }
  }
  ge_status st = GE_OK;
  ge_attr_value *av = NULL;
  size_t n_av = 0;
  if (n_attrs) {
    av = calloc(n_attrs, sizeof *av);
    if (!av) {
      free(domain);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "graph: out of memory");
    }
    for (size_t i = 0; i < n_attrs && st == GE_OK; i++) {
      for (size_t j = 0; j < i; j++) {
        if (attrs[i].name && attrs[j].name && strcmp(attrs[i].name, attrs[j].name) == 0) {
          st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': node '%s' (%s): duplicate attribute '%s'",
                        gname(g), nm, op, attrs[i].name);
          break;
        }
      }
      if (st != GE_OK) break;
      st = ge_attr_value_from_public(&av[i], &attrs[i], g);
      if (st != GE_OK) {
        ge_error_prefix(st, "graph '%s': node '%s' (%s): ", gname(g), nm, op);
        break;
      }
      n_av = i + 1;
    }
  }
  int32_t nid = -1;
  if (st == GE_OK)
    st = ge_graph_append_node(g, op, domain ? domain : "", nm, inputs, n_in, outputs, n_out, &nid);
  free(domain);
  if (st != GE_OK) {
    for (size_t i = 0; i < n_av; i++) ge_attr_value_clear(&av[i]);
    free(av);
    return st;
  }
  g->nodes[nid].attrs = av;
  g->nodes[nid].n_attrs = n_av;
  return GE_OK;
}

ge_status ge_graph_add_output(ge_graph *g, const char *value_name) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_add_output: NULL graph");
  if (!value_name || !value_name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': an output needs a value name", gname(g));
  int32_t id = ge_graph_find_value(g, value_name);
  if (id < 0 && g->parent && ge_graph_resolve_input(g, value_name, &id) != GE_OK) id = -1;
  if (id < 0)
    return ge_error(GE_ERR_NOT_FOUND, "graph '%s': output '%s' names no value of the graph",
                    gname(g), value_name);
  return append_id(&g->outputs, &g->n_outputs, id);
}

ge_status ge_graph_set_opset(ge_graph *g, const char *domain, int64_t version) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_set_opset: NULL graph");
  const char *d = domain ? domain : "";
  if (strcmp(d, "ai.onnx") == 0) d = "";
  if (version < 1)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': opset version %lld for domain '%s' is invalid",
                    gname(g), (long long)version, d[0] ? d : "ai.onnx");
  if (!d[0] && (version < GE_ONNX_OPSET_MIN || version > GE_ONNX_OPSET_MAX))
    return ge_error(GE_ERR_UNSUPPORTED,
                    "graph '%s': ai.onnx opset %lld is not supported (ge implements %d..%d)",
                    gname(g), (long long)version, GE_ONNX_OPSET_MIN, GE_ONNX_OPSET_MAX);
  GE_CHECK(ge_graph_set_opset_version(g, d, version));
  /* nodes already added follow the graph's opset */
  for (size_t i = 0; i < g->n_nodes; i++) {
    const char *nd = g->nodes[i].domain ? g->nodes[i].domain : "";
    if (strcmp(nd, "ai.onnx") == 0) nd = "";
    if (strcmp(nd, d) == 0) g->nodes[i].opset = version;
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ introspection */

static bool public_input(const ge_graph *g, size_t k) {
  int32_t id = g->inputs[k];
  return id >= 0 && (size_t)id < g->n_values && g->values[id].kind != GE_VALUE_CONSTANT;
}

/* Index into g->inputs of the i-th public (non-constant) input, or SIZE_MAX. */
static size_t public_input_slot(const ge_graph *g, size_t i) {
  for (size_t k = 0; k < g->n_inputs; k++) {
    if (!public_input(g, k)) continue;
    if (i == 0) return k;
    i--;
  }
  return SIZE_MAX;
}

size_t ge_graph_num_inputs(const ge_graph *g) {
  if (!g) return 0;
  size_t n = 0;
  for (size_t k = 0; k < g->n_inputs; k++) n += public_input(g, k);
  return n;
}

size_t ge_graph_num_outputs(const ge_graph *g) { return g ? g->n_outputs : 0; }
size_t ge_graph_num_nodes(const ge_graph *g) { return g ? g->n_nodes : 0; }

/* Fills the scratch slot `slot` with the public dims of value id.  The scratch lives in the
   graph (it is allocation owned by the graph, so writing through a const graph is sound). */
static ge_status value_info(const ge_graph *cg, size_t slot, int32_t id, const char **name,
                            ge_dtype *dt, const int64_t **dims, size_t *rank) {
  ge_graph *g = (ge_graph *)cg;
  size_t need_slots = g->n_inputs + g->n_outputs;
  size_t need;
  if (ge_mul_overflow_size(need_slots ? need_slots : 1, GE_MAX_RANK, &need))
    return ge_error(GE_ERR_OUT_OF_MEMORY, "graph '%s': too many inputs/outputs", gname(g));
  if (g->info_dims_cap < need) {
    int64_t *p = realloc(g->info_dims, need * sizeof *p);
    if (!p) return ge_error(GE_ERR_OUT_OF_MEMORY, "graph: out of memory");
    g->info_dims = p;
    g->info_dims_cap = need;
  }
  const ge_value *v = &g->values[id];
  int64_t *d = g->info_dims + slot * GE_MAX_RANK;
  size_t r = 0;
  if (v->type.shape.rank > 0 && v->type.shape.rank <= GE_MAX_RANK) {
    r = (size_t)v->type.shape.rank;
    for (size_t k = 0; k < r; k++) d[k] = v->type.shape.dims[k] >= 0 ? v->type.shape.dims[k] : -1;
  }
  if (name) *name = v->name;
  if (dt) *dt = v->type.dtype;
  if (dims) *dims = d;
  if (rank) *rank = r;
  return GE_OK;
}

ge_status ge_graph_input_info(const ge_graph *g, size_t i, const char **name, ge_dtype *dt,
                              const int64_t **dims, size_t *rank) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_input_info: NULL graph");
  size_t k = public_input_slot(g, i);
  if (k == SIZE_MAX)
    return ge_error(GE_ERR_NOT_FOUND, "graph '%s': no input %zu (it has %zu)", gname(g), i,
                    ge_graph_num_inputs(g));
  return value_info(g, k, g->inputs[k], name, dt, dims, rank);
}

ge_status ge_graph_output_info(const ge_graph *g, size_t i, const char **name, ge_dtype *dt,
                               const int64_t **dims, size_t *rank) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_output_info: NULL graph");
  if (i >= g->n_outputs || g->outputs[i] < 0 || (size_t)g->outputs[i] >= g->n_values)
    return ge_error(GE_ERR_NOT_FOUND, "graph '%s': no output %zu (it has %zu)", gname(g), i,
                    g->n_outputs);
  return value_info(g, g->n_inputs + i, g->outputs[i], name, dt, dims, rank);
}

const char *ge_graph_input_dim_name(const ge_graph *g, size_t i, size_t d) {
  if (!g) return NULL;
  size_t k = public_input_slot(g, i);
  if (k == SIZE_MAX) return NULL;
  const ge_value *v = &g->values[g->inputs[k]];
  if (v->type.shape.rank < 0 || d >= (size_t)v->type.shape.rank || d >= GE_MAX_RANK) return NULL;
  int64_t dim = v->type.shape.dims[d];
  if (dim >= GE_DIM_UNKNOWN) return NULL;
  const ge_graph *r = g;
  while (r->parent) r = r->parent;
  size_t id = GE_DIM_SYM_ID(dim);
  return id < r->n_syms ? r->syms[id] : NULL;
}
