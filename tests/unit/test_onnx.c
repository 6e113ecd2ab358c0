/* ONNX import/export: models are built in the test by packing protobuf-c structs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "frontend/onnx/onnx.h"
#include "ge_onnx.pb-c.h"
#include "ir/ir.h"

/* ------------------------------------------------------------------ model building helpers */

/* All helper allocations live in a pool freed per test. */
typedef struct pool {
  void *p[4096];
  size_t n;
} pool;

static pool *P;

static void *palloc(size_t n) {
  void *p = calloc(1, n ? n : 1);
  assert_non_null(p);
  assert_true(P->n < sizeof P->p / sizeof P->p[0]);
  P->p[P->n++] = p;
  return p;
}

static void pool_free(void) {
  for (size_t i = 0; i < P->n; i++) free(P->p[i]);
  P->n = 0;
}

static char *pstr(const char *s) {
  char *r = palloc(strlen(s) + 1);
  strcpy(r, s);
  return r;
}

static GeOnnx__ValueInfoProto *vinfo(const char *name, int elem, int rank, const int64_t *dims,
                                     const char *const *params) {
  GeOnnx__ValueInfoProto *vi = palloc(sizeof *vi);
  ge_onnx__value_info_proto__init(vi);
  vi->name = pstr(name);
  if (elem < 0) return vi;
  GeOnnx__TypeProto *tp = palloc(sizeof *tp);
  ge_onnx__type_proto__init(tp);
  GeOnnx__TypeProto__Tensor *tt = palloc(sizeof *tt);
  ge_onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  if (rank >= 0) {
    GeOnnx__TensorShapeProto *sp = palloc(sizeof *sp);
    ge_onnx__tensor_shape_proto__init(sp);
    sp->n_dim = (size_t)rank;
    sp->dim = palloc(sizeof(void *) * (size_t)(rank ? rank : 1));
    for (int i = 0; i < rank; i++) {
      GeOnnx__TensorShapeProto__Dimension *d = palloc(sizeof *d);
      ge_onnx__tensor_shape_proto__dimension__init(d);
      if (params && params[i]) {
        d->value_case = GE_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = pstr(params[i]);
      } else if (dims[i] >= 0) {
        d->value_case = GE_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = dims[i];
      }
      sp->dim[i] = d;
    }
    tt->shape = sp;
  }
  tp->value_case = GE_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->type = tp;
  return vi;
}

static GeOnnx__TensorProto *tensor_raw(const char *name, int dtype, int rank, const int64_t *dims,
                                       const void *data, size_t nbytes) {
  GeOnnx__TensorProto *t = palloc(sizeof *t);
  ge_onnx__tensor_proto__init(t);
  t->name = name ? pstr(name) : NULL;
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = palloc(sizeof(int64_t) * (size_t)(rank ? rank : 1));
  memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  if (data) {
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = palloc(nbytes);
    memcpy(t->raw_data.data, data, nbytes);
  }
  return t;
}

static GeOnnx__NodeProto *node(const char *op, const char *name, int n_in, const char *const *in,
                               int n_out, const char *const *out) {
  GeOnnx__NodeProto *n = palloc(sizeof *n);
  ge_onnx__node_proto__init(n);
  n->op_type = pstr(op);
  n->name = name ? pstr(name) : NULL;
  n->n_input = (size_t)n_in;
  n->input = palloc(sizeof(char *) * (size_t)(n_in ? n_in : 1));
  for (int i = 0; i < n_in; i++) n->input[i] = pstr(in[i]);
  n->n_output = (size_t)n_out;
  n->output = palloc(sizeof(char *) * (size_t)(n_out ? n_out : 1));
  for (int i = 0; i < n_out; i++) n->output[i] = pstr(out[i]);
  n->attribute = palloc(sizeof(void *) * 8);
  return n;
}

static GeOnnx__AttributeProto *node_attr(GeOnnx__NodeProto *n, const char *name, int type) {
  GeOnnx__AttributeProto *a = palloc(sizeof *a);
  ge_onnx__attribute_proto__init(a);
  a->name = pstr(name);
  a->has_type = 1;
  a->type = type;
  n->attribute[n->n_attribute++] = a;
  return a;
}

static GeOnnx__GraphProto *graph(const char *name) {
  GeOnnx__GraphProto *g = palloc(sizeof *g);
  ge_onnx__graph_proto__init(g);
  g->name = pstr(name);
  g->node = palloc(sizeof(void *) * 16);
  g->initializer = palloc(sizeof(void *) * 32);
  g->input = palloc(sizeof(void *) * 16);
  g->output = palloc(sizeof(void *) * 16);
  g->value_info = palloc(sizeof(void *) * 16);
  g->sparse_initializer = palloc(sizeof(void *) * 4);
  return g;
}

static GeOnnx__ModelProto *model(GeOnnx__GraphProto *g, int64_t opset) {
  GeOnnx__ModelProto *m = palloc(sizeof *m);
  ge_onnx__model_proto__init(m);
  m->has_ir_version = 1;
  m->ir_version = 8;
  m->producer_name = pstr("test_onnx");
  m->graph = g;
  m->n_opset_import = 1;
  m->opset_import = palloc(sizeof(void *) * 4);
  GeOnnx__OperatorSetIdProto *o = palloc(sizeof *o);
  ge_onnx__operator_set_id_proto__init(o);
  o->domain = pstr("");
  o->has_version = 1;
  o->version = opset;
  m->opset_import[0] = o;
  return m;
}

static uint8_t *pack(const GeOnnx__ModelProto *m, size_t *n) {
  *n = ge_onnx__model_proto__get_packed_size(m);
  uint8_t *buf = palloc(*n);
  assert_int_equal(ge_onnx__model_proto__pack(m, buf), *n);
  return buf;
}

/* y = Add(x[N,3], w[3]) with w an initializer; then Relu. */
static GeOnnx__ModelProto *simple_model(void) {
  GeOnnx__GraphProto *g = graph("simple");
  int64_t d3[1] = {3};
  float w[3] = {1, 2, 3};
  g->initializer[g->n_initializer++] = tensor_raw("w", 1, 1, d3, w, sizeof w);
  int64_t dx[2] = {-1, 3};
  const char *px[2] = {"N", NULL};
  g->input[g->n_input++] = vinfo("x", 1, 2, dx, px);
  g->output[g->n_output++] = vinfo("y", 1, 2, dx, px);
  g->node[g->n_node++] = node("Add", "add0", 2, (const char *[]){"x", "w"}, 1, (const char *[]){"t"});
  GeOnnx__NodeProto *r = node("Relu", "relu0", 1, (const char *[]){"t"}, 1, (const char *[]){"y"});
  GeOnnx__AttributeProto *a = node_attr(r, "alpha_test", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = 0.5f;
  a = node_attr(r, "ints_test", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = 3;
  a->ints = palloc(3 * sizeof(int64_t));
  a->ints[0] = 1;
  a->ints[1] = -2;
  a->ints[2] = 3;
  a = node_attr(r, "s_test", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.data = (uint8_t *)pstr("hello");
  a->s.len = 5;
  g->node[g->n_node++] = r;
  int64_t dt[2] = {-1, 3};
  g->value_info[g->n_value_info++] = vinfo("t", 1, 2, dt, px);
  return model(g, 17);
}

static ge_status load_mem(const GeOnnx__ModelProto *m, const char *base, ge_graph **out) {
  size_t n;
  uint8_t *buf = pack(m, &n);
  return ge_graph_load_buffer(buf, n, base, out);
}

static bool msg_has(const char *needle) {
  if (strstr(ge_last_error(), needle)) return true;
  print_error("message '%s' lacks '%s'\n", ge_last_error(), needle);
  return false;
}

static int setup(void **state) {
  P = calloc(1, sizeof *P);
  return P ? 0 : -1;
}

static int teardown(void **state) {
  pool_free();
  free(P);
  return 0;
}

/* ------------------------------------------------------------------ tests */

static void test_load_simple(void **state) {
  ge_graph *g;
  assert_int_equal(load_mem(simple_model(), NULL, &g), GE_OK);
  assert_int_equal(g->n_nodes, 2);
  assert_int_equal(g->n_inputs, 1);
  assert_int_equal(g->n_outputs, 1);
  assert_int_equal(g->ir_version, 8);
  assert_string_equal(g->producer_name, "test_onnx");
  assert_int_equal(ge_graph_opset(g, ""), 17);
  assert_int_equal(ge_graph_opset(g, "ai.onnx"), 17);
  const ge_value *x = &g->values[g->inputs[0]];
  assert_string_equal(x->name, "x");
  assert_int_equal(x->kind, GE_VALUE_INPUT);
  assert_int_equal(x->type.dtype, GE_F32);
  assert_int_equal(x->type.shape.rank, 2);
  assert_true(x->type.shape.dims[0] <= -2);
  assert_string_equal(g->syms[GE_DIM_SYM_ID(x->type.shape.dims[0])], "N");
  assert_int_equal(x->type.shape.dims[1], 3);
  int32_t w = ge_graph_find_value(g, "w");
  assert_true(w >= 0);
  assert_int_equal(g->values[w].kind, GE_VALUE_CONSTANT);
  const float *wd = g->values[w].constant->data;
  assert_true(wd[0] == 1.0f && wd[1] == 2.0f && wd[2] == 3.0f);
  const ge_node *r = &g->nodes[1];
  assert_string_equal(r->op_type, "Relu");
  assert_int_equal(r->opset, 17);
  assert_true(ge_node_attr_float(r, "alpha_test", 0) == 0.5f);
  assert_string_equal(ge_node_attr_string(r, "s_test", ""), "hello");
  const int64_t *ints;
  size_t n;
  assert_true(ge_node_attr_ints(r, "ints_test", &ints, &n));
  assert_int_equal(n, 3);
  assert_int_equal(ints[1], -2);
  int32_t t = ge_graph_find_value(g, "t");
  assert_int_equal(g->values[t].type.dtype, GE_F32);
  ge_graph_free(g);
}

static void export_bytes(const ge_graph *g, void **data, size_t *size) {
  assert_int_equal(ge_onnx_export(g, data, size), GE_OK);
}

/* load -> save -> load gives the same graph: the second export is byte-identical. */
static void roundtrip_check(const GeOnnx__ModelProto *m) {
  ge_graph *g1, *g2;
  assert_int_equal(load_mem(m, NULL, &g1), GE_OK);
  char dir[] = "/tmp/ge_onnx_rt_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  assert_int_equal(ge_graph_save(g1, path), GE_OK);
  assert_int_equal(ge_graph_load(path, NULL, 0, &g2), GE_OK);
  assert_int_equal(g1->n_nodes, g2->n_nodes);
  assert_int_equal(g1->n_values, g2->n_values);
  assert_int_equal(g1->n_inputs, g2->n_inputs);
  assert_int_equal(g1->n_outputs, g2->n_outputs);
  void *b1, *b2;
  size_t n1, n2;
  export_bytes(g1, &b1, &n1);
  export_bytes(g2, &b2, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(b1, b2, n1);
  free(b1);
  free(b2);
  unlink(path);
  rmdir(dir);
  ge_graph_free(g1);
  ge_graph_free(g2);
}

static void test_roundtrip(void **state) { roundtrip_check(simple_model()); }

static void test_roundtrip_metadata(void **state) {
  GeOnnx__ModelProto *m = simple_model();
  m->doc_string = pstr("model doc");
  m->domain = pstr("org.test");
  m->has_model_version = 1;
  m->model_version = 42;
  m->producer_version = pstr("9.9");
  m->n_metadata_props = 1;
  m->metadata_props = palloc(sizeof(void *));
  GeOnnx__StringStringEntryProto *kv = palloc(sizeof *kv);
  ge_onnx__string_string_entry_proto__init(kv);
  kv->key = pstr("author");
  kv->value = pstr("me");
  m->metadata_props[0] = kv;
  m->graph->node[0]->doc_string = pstr("adds");
  ge_graph *g;
  assert_int_equal(load_mem(m, NULL, &g), GE_OK);
  assert_string_equal(g->doc, "model doc");
  assert_string_equal(g->model_domain, "org.test");
  assert_int_equal(g->model_version, 42);
  assert_int_equal(g->n_meta, 1);
  assert_string_equal(g->meta_keys[0], "author");
  assert_string_equal(g->meta_values[0], "me");
  void *b;
  size_t n;
  export_bytes(g, &b, &n);
  GeOnnx__ModelProto *m2 = ge_onnx__model_proto__unpack(NULL, n, b);
  assert_non_null(m2);
  assert_string_equal(m2->doc_string, "model doc");
  assert_int_equal(m2->model_version, 42);
  assert_string_equal(m2->producer_version, "9.9");
  assert_int_equal(m2->ir_version, 8);
  assert_string_equal(m2->graph->node[0]->doc_string, "adds");
  assert_string_equal(m2->graph->input[0]->type->tensor_type->shape->dim[0]->dim_param, "N");
  ge_onnx__model_proto__free_unpacked(m2, NULL);
  free(b);
  ge_graph_free(g);
  roundtrip_check(m);
}

/* every dtype as raw_data and as typed fields */
static void test_all_dtypes(void **state) {
  static const struct {
    int onnx;
    ge_dtype dt;
  } types[] = {{1, GE_F32}, {2, GE_U8},  {3, GE_I8},   {4, GE_U16},  {5, GE_I16},
               {6, GE_I32}, {7, GE_I64}, {9, GE_BOOL}, {10, GE_F16}, {11, GE_F64},
               {12, GE_U32}, {13, GE_U64}, {16, GE_BF16}};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    for (int typed = 0; typed < 2; typed++) {
      GeOnnx__GraphProto *g = graph("dt");
      int64_t d[1] = {4};
      size_t esz = ge_dtype_size(types[k].dt);
      uint8_t raw[32];
      memset(raw, 0, sizeof raw);
      /* element i has the value i (1.0 for floats etc.) */
      for (int i = 0; i < 4; i++) {
        switch (types[k].dt) {
          case GE_F32: ((float *)raw)[i] = (float)i; break;
          case GE_F64: ((double *)raw)[i] = i; break;
          case GE_F16: ((uint16_t *)raw)[i] = ge_f32_to_f16((float)i); break;
          case GE_BF16: ((uint16_t *)raw)[i] = ge_f32_to_bf16((float)i); break;
          case GE_BOOL: raw[i] = (uint8_t)(i & 1); break;
          default: memcpy(raw + (size_t)i * esz, &(int64_t){i}, esz); break; /* little endian */
        }
      }
      GeOnnx__TensorProto *t = tensor_raw("c", types[k].onnx, 1, d, typed ? NULL : raw, 4 * esz);
      if (typed) {
        switch (types[k].dt) {
          case GE_F32:
            t->n_float_data = 4;
            t->float_data = palloc(16);
            memcpy(t->float_data, raw, 16);
            break;
          case GE_F64:
            t->n_double_data = 4;
            t->double_data = palloc(32);
            memcpy(t->double_data, raw, 32);
            break;
          case GE_I64:
            t->n_int64_data = 4;
            t->int64_data = palloc(32);
            memcpy(t->int64_data, raw, 32);
            break;
          case GE_U32:
          case GE_U64:
            t->n_uint64_data = 4;
            t->uint64_data = palloc(32);
            for (int i = 0; i < 4; i++) t->uint64_data[i] = (uint64_t)i;
            break;
          default:
            t->n_int32_data = 4;
            t->int32_data = palloc(16);
            for (int i = 0; i < 4; i++) {
              if (esz == 2) t->int32_data[i] = ((uint16_t *)raw)[i];
              else if (esz == 1) t->int32_data[i] = raw[i];
              else t->int32_data[i] = ((int32_t *)raw)[i];
            }
        }
      }
      g->initializer[g->n_initializer++] = t;
      g->output[g->n_output++] = vinfo("c", types[k].onnx, 1, d, NULL);
      ge_graph *gg;
      ge_status st = load_mem(model(g, 17), NULL, &gg);
      if (st != GE_OK) print_error("%s\n", ge_last_error());
      assert_int_equal(st, GE_OK);
      const ge_tensor *c = gg->values[ge_graph_find_value(gg, "c")].constant;
      assert_non_null(c);
      assert_int_equal(c->dtype, types[k].dt);
      assert_int_equal(c->numel, 4);
      assert_memory_equal(c->data, raw, 4 * esz);
      ge_graph_free(gg);
      roundtrip_check(model(g, 17));
    }
  }
}

static void test_string_tensor(void **state) {
  GeOnnx__GraphProto *g = graph("str");
  int64_t d[1] = {3};
  GeOnnx__TensorProto *t = tensor_raw("s", 8, 1, d, NULL, 0);
  t->n_string_data = 3;
  t->string_data = palloc(3 * sizeof(ProtobufCBinaryData));
  const char *vals[3] = {"a", "", "hello"};
  for (int i = 0; i < 3; i++) {
    t->string_data[i].data = (uint8_t *)pstr(vals[i]);
    t->string_data[i].len = strlen(vals[i]);
  }
  g->initializer[g->n_initializer++] = t;
  g->output[g->n_output++] = vinfo("s", 8, 1, d, NULL);
  ge_graph *gg;
  assert_int_equal(load_mem(model(g, 17), NULL, &gg), GE_OK);
  const ge_tensor *c = gg->values[ge_graph_find_value(gg, "s")].constant;
  assert_int_equal(c->dtype, GE_STRING);
  char *const *s = c->data;
  assert_string_equal(s[0], "a");
  assert_string_equal(s[2], "hello");
  ge_graph_free(gg);
  roundtrip_check(model(g, 17));
}

static void test_unsupported_dtype(void **state) {
  GeOnnx__GraphProto *g = graph("cx");
  int64_t d[1] = {1};
  uint8_t raw[8] = {0};
  g->initializer[g->n_initializer++] = tensor_raw("cplx", 14, 1, d, raw, 8);
  g->output[g->n_output++] = vinfo("cplx", 14, 1, d, NULL);
  ge_graph *gg;
  assert_int_equal(load_mem(model(g, 17), NULL, &gg), GE_ERR_UNSUPPORTED);
  assert_null(gg);
  assert_true(msg_has("cplx"));
  assert_true(msg_has("complex64"));
}

static void test_size_mismatch(void **state) {
  GeOnnx__GraphProto *g = graph("bad");
  int64_t d[1] = {4};
  float raw[3] = {0};
  g->initializer[g->n_initializer++] = tensor_raw("short", 1, 1, d, raw, sizeof raw);
  g->output[g->n_output++] = vinfo("short", 1, 1, d, NULL);
  ge_graph *gg;
  assert_int_equal(load_mem(model(g, 17), NULL, &gg), GE_ERR_PARSE);
  assert_true(msg_has("short"));
  /* huge dims with no data must not allocate */
  g = graph("huge");
  int64_t dh[2] = {1 << 30, 1 << 30};
  g->initializer[g->n_initializer++] = tensor_raw("huge", 1, 2, dh, raw, sizeof raw);
  g->output[g->n_output++] = vinfo("huge", 1, 1, d, NULL);
  assert_int_equal(load_mem(model(g, 17), NULL, &gg), GE_ERR_PARSE);
  assert_true(msg_has("huge"));
}

static GeOnnx__StringStringEntryProto *kv(const char *k, const char *v) {
  GeOnnx__StringStringEntryProto *e = palloc(sizeof *e);
  ge_onnx__string_string_entry_proto__init(e);
  e->key = pstr(k);
  e->value = pstr(v);
  return e;
}

static GeOnnx__ModelProto *external_model(const char *location, const char *offset,
                                          const char *length) {
  GeOnnx__GraphProto *g = graph("ext");
  int64_t d[1] = {4};
  GeOnnx__TensorProto *t = tensor_raw("wext", 1, 1, d, NULL, 0);
  t->has_data_location = 1;
  t->data_location = GE_ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t->external_data = palloc(3 * sizeof(void *));
  t->external_data[t->n_external_data++] = kv("location", location);
  if (offset) t->external_data[t->n_external_data++] = kv("offset", offset);
  if (length) t->external_data[t->n_external_data++] = kv("length", length);
  g->initializer[g->n_initializer++] = t;
  g->output[g->n_output++] = vinfo("wext", 1, 1, d, NULL);
  return model(g, 17);
}

static void test_external_data(void **state) {
  char dir[] = "/tmp/ge_onnx_ext_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], mpath[256];
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  float junk[2] = {-1, -1}, vals[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  fwrite(junk, sizeof junk, 1, f);
  fwrite(vals, sizeof vals, 1, f);
  fclose(f);

  /* from memory with a base dir */
  ge_graph *g;
  assert_int_equal(load_mem(external_model("weights.bin", "8", "16"), dir, &g), GE_OK);
  const ge_tensor *t = g->values[ge_graph_find_value(g, "wext")].constant;
  assert_memory_equal(t->data, vals, sizeof vals);
  ge_graph_free(g);

  /* from a file next to the data, no length given */
  size_t n;
  uint8_t *buf = pack(external_model("weights.bin", "8", NULL), &n);
  snprintf(mpath, sizeof mpath, "%s/m.onnx", dir);
  f = fopen(mpath, "wb");
  fwrite(buf, 1, n, f);
  fclose(f);
  assert_int_equal(ge_graph_load(mpath, NULL, 0, &g), GE_OK);
  t = g->values[ge_graph_find_value(g, "wext")].constant;
  assert_memory_equal(t->data, vals, sizeof vals);
  ge_graph_free(g);

  /* the option overrides the folder */
  ge_option opt = {"ge.onnx.externalDataDir", "/nonexistent_ge_dir"};
  assert_int_equal(ge_graph_load(mpath, &opt, 1, &g), GE_ERR_IO);
  assert_true(msg_has("wext"));
  ge_option bad = {"ge.onnx.bogus", "1"};
  assert_int_equal(ge_graph_load(mpath, &bad, 1, &g), GE_ERR_INVALID_ARGUMENT);
  assert_true(msg_has("ge.onnx.bogus"));

  /* errors */
  assert_int_equal(load_mem(external_model("/etc/passwd", NULL, NULL), dir, &g), GE_ERR_IO);
  assert_true(msg_has("wext"));
  assert_int_equal(load_mem(external_model("../weights.bin", NULL, NULL), dir, &g), GE_ERR_IO);
  assert_true(msg_has("escapes"));
  assert_int_equal(load_mem(external_model("a/../../x", NULL, NULL), dir, &g), GE_ERR_IO);
  assert_int_equal(load_mem(external_model("weights.bin", "100", NULL), dir, &g), GE_ERR_IO);
  assert_true(msg_has("offset"));
  assert_int_equal(load_mem(external_model("weights.bin", "8", "64"), dir, &g), GE_ERR_IO);
  assert_int_equal(load_mem(external_model("weights.bin", "0", "8"), dir, &g), GE_ERR_PARSE);
  assert_true(msg_has("wext"));
  assert_int_equal(load_mem(external_model("missing.bin", NULL, NULL), dir, &g), GE_ERR_IO);
  assert_true(msg_has("missing.bin"));
  assert_int_equal(load_mem(external_model("weights.bin", "8", NULL), NULL, &g), GE_ERR_IO);
  unlink(path);
  unlink(mpath);
  rmdir(dir);
}

static void test_truncated(void **state) {
  size_t n;
  uint8_t *buf = pack(simple_model(), &n);
  for (size_t len = 0; len < n; len++) {
    uint8_t *cut = malloc(len ? len : 1);
    memcpy(cut, buf, len);
    ge_graph *g = (ge_graph *)1;
    ge_status st = ge_graph_load_buffer(cut, len, NULL, &g);
    if (st != GE_ERR_PARSE) print_error("length %zu: %s: %s\n", len, ge_status_str(st), ge_last_error());
    assert_int_equal(st, GE_ERR_PARSE);
    assert_null(g);
    free(cut);
  }
  /* and random corruption never crashes */
  uint8_t *copy = malloc(n);
  unsigned seed = 12345;
  for (int it = 0; it < 3000; it++) {
    memcpy(copy, buf, n);
    for (int k = 0; k < 3; k++) {
      seed = seed * 1103515245u + 12345u;
      copy[(seed >> 8) % n] = (uint8_t)(seed >> 16);
    }
    ge_graph *g = NULL;
    if (ge_graph_load_buffer(copy, n, NULL, &g) == GE_OK) ge_graph_free(g);
  }
  free(copy);
}

static void test_opset_range(void **state) {
  GeOnnx__ModelProto *m = simple_model();
  /* opsets below 7 load (legacy semantics are checked per op); past the newest is refused */
  m->opset_import[0]->version = 5;
  ge_graph *g;
  assert_int_equal(load_mem(m, NULL, &g), GE_OK);
  ge_graph_free(g);
  m->opset_import[0]->version = GE_ONNX_OPSET_MAX + 1;
  assert_int_equal(load_mem(m, NULL, &g), GE_ERR_UNSUPPORTED);
  assert_true(msg_has("opset"));
  m->opset_import[0]->domain = pstr("ai.onnx");
  m->opset_import[0]->version = 13;
  assert_int_equal(load_mem(m, NULL, &g), GE_OK);
  assert_int_equal(g->nodes[0].opset, 13);
  ge_graph_free(g);
}

static void test_missing_file(void **state) {
  ge_graph *g;
  assert_int_equal(ge_graph_load("/nonexistent/dir/model.onnx", NULL, 0, &g), GE_ERR_IO);
  assert_null(g);
  assert_true(msg_has("/nonexistent/dir/model.onnx"));
}

static void test_other_formats(void **state) {
  ge_graph *g;
  /* a TensorFlow GraphDef: node { name: "a" op: "Const" } */
  const uint8_t tf[] = {0x0a, 0x0c, 0x0a, 0x01, 'a', 0x12, 0x05, 'C', 'o', 'n', 's', 't', 0x22, 0x00};
  assert_int_equal(ge_graph_load_buffer(tf, sizeof tf, NULL, &g), GE_ERR_UNSUPPORTED);
  assert_true(msg_has("TensorFlow GraphDef"));
  const char gem[] = "GEM1 offline model";
  /* not a valid .gem (see test_gem.c): a parse error */
  assert_int_equal(ge_graph_load_buffer(gem, sizeof gem, NULL, &g), GE_ERR_PARSE);
  assert_true(msg_has(".gem"));
  const char txt[] = "hello, this is not a model";
  assert_int_equal(ge_graph_load_buffer(txt, sizeof txt, NULL, &g), GE_ERR_PARSE);
  assert_int_equal(ge_graph_load_buffer(txt, 0, NULL, &g), GE_ERR_PARSE);
  /* a file: errors name it */
  char dir[] = "/tmp/ge_onnx_fmt_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/graph.pb", dir);
  FILE *f = fopen(path, "wb");
  fwrite(tf, 1, sizeof tf, f);
  fclose(f);
  assert_int_equal(ge_graph_load(path, NULL, 0, &g), GE_ERR_UNSUPPORTED);
  assert_true(msg_has(path));
  f = fopen(path, "wb");
  fwrite(txt, 1, sizeof txt, f);
  fclose(f);
  assert_int_equal(ge_graph_load(path, NULL, 0, &g), GE_ERR_PARSE);
  assert_true(msg_has(path));
  unlink(path);
  rmdir(dir);
}

static void test_undefined_input(void **state) {
  GeOnnx__ModelProto *m = simple_model();
  m->graph->node[1]->input[0] = pstr("nowhere");
  ge_graph *g;
  assert_int_equal(load_mem(m, NULL, &g), GE_ERR_PARSE);
  assert_true(msg_has("relu0"));
  assert_true(msg_has("nowhere"));
  /* duplicate producer */
  m = simple_model();
  m->graph->node[1]->output[0] = pstr("t");
  assert_int_equal(load_mem(m, NULL, &g), GE_ERR_PARSE);
  assert_true(msg_has("relu0"));
  /* an unknown op is not an import error */
  m = simple_model();
  m->graph->node[1]->op_type = pstr("NoSuchOp");
  m->graph->node[1]->domain = pstr("com.example");
  assert_int_equal(load_mem(m, NULL, &g), GE_OK);
  ge_graph_free(g);
}

/* If with branches that read x from the outer graph; nodes out of order in the file. */
static GeOnnx__ModelProto *if_model(void) {
  GeOnnx__GraphProto *g = graph("main");
  int64_t d1[1] = {3}, d0[1] = {0};
  g->input[g->n_input++] = vinfo("x", 1, 1, d1, NULL);
  g->input[g->n_input++] = vinfo("cond", 9, 0, d0, NULL);
  g->output[g->n_output++] = vinfo("y", 1, 1, d1, NULL);
  GeOnnx__GraphProto *then_g = graph("then");
  then_g->node[then_g->n_node++] =
      node("Neg", "neg_in_then", 1, (const char *[]){"x2"}, 1, (const char *[]){"a"});
  then_g->output[then_g->n_output++] = vinfo("a", 1, 1, d1, NULL);
  GeOnnx__GraphProto *else_g = graph("else");
  else_g->output[else_g->n_output++] = vinfo("x", 1, 1, d1, NULL); /* outer value as output */
  GeOnnx__NodeProto *n_if = node("If", "if0", 1, (const char *[]){"cond"}, 1, (const char *[]){"y"});
  node_attr(n_if, "then_branch", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = then_g;
  node_attr(n_if, "else_branch", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = else_g;
  g->node[g->n_node++] = n_if; /* before the producer of x2 */
  g->node[g->n_node++] = node("Abs", "abs0", 1, (const char *[]){"x"}, 1, (const char *[]){"x2"});
  return model(g, 16);
}

static void test_subgraph_outer(void **state) {
  ge_graph *g;
  ge_status st = load_mem(if_model(), NULL, &g);
  if (st) print_error("%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  /* (ge_graph_toposort orders by explicit inputs only, so the order of If and Abs is not
     checked here: the file lists If first.) */
  const ge_node *n_if = strcmp(g->nodes[0].op_type, "If") == 0 ? &g->nodes[0] : &g->nodes[1];
  assert_string_equal(n_if->op_type, "If");
  const ge_attr_value *tb = ge_node_attr(n_if, "then_branch");
  assert_non_null(tb);
  assert_int_equal(tb->kind, GE_ATTR_KIND_GRAPH);
  ge_graph *sub = tb->g;
  assert_ptr_equal(sub->parent, g);
  int32_t x2 = ge_graph_find_value(sub, "x2");
  assert_true(x2 >= 0);
  assert_int_equal(sub->values[x2].kind, GE_VALUE_OUTER);
  assert_int_equal(sub->nodes[0].opset, 16);
  const ge_graph *eb = ge_node_attr(n_if, "else_branch")->g;
  assert_int_equal(eb->n_outputs, 1);
  assert_int_equal(eb->values[eb->outputs[0]].kind, GE_VALUE_OUTER);
  ge_graph_free(g);
  roundtrip_check(if_model());

  /* a subgraph reading a name defined nowhere */
  GeOnnx__ModelProto *m = if_model();
  m->graph->node[0]->attribute[0]->g->node[0]->input[0] = pstr("ghost");
  assert_int_equal(load_mem(m, NULL, &g), GE_ERR_PARSE);
  assert_true(msg_has("neg_in_then"));
  assert_true(msg_has("ghost"));
}

static void test_deep_nesting(void **state) {
  /* 100 nested Ifs (via protobuf structs): rejected cleanly */
  GeOnnx__GraphProto *inner = graph("g");
  for (int i = 0; i < 100; i++) {
    GeOnnx__GraphProto *outer = graph("g");
    GeOnnx__NodeProto *n = node("If", NULL, 1, (const char *[]){"c"}, 0, NULL);
    node_attr(n, "then_branch", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = inner;
    outer->node[outer->n_node++] = n;
    inner = outer;
  }
  int64_t d0[1] = {0};
  inner->input[inner->n_input++] = vinfo("c", 9, 0, d0, NULL);
  ge_graph *g;
  ge_status st = load_mem(model(inner, 17), NULL, &g);
  assert_true(st == GE_ERR_UNSUPPORTED || st == GE_ERR_PARSE);
  assert_true(msg_has("nested"));
  /* a hostile byte stream: 200000 nested graph attributes */
  size_t levels = 200000, n = 0;
  uint8_t *buf = malloc(levels * 12 + 16);
  /* build from the inside out: each level is GraphProto{node{attribute{g: <inner>}}} */
  size_t cap = levels * 12 + 16;
  size_t pos = cap;
  for (size_t i = 0; i < levels; i++) {
    size_t len = cap - pos;
    /* field 6 (g) of AttributeProto, then field 5 (attribute) of NodeProto, then field 1 (node)
       of GraphProto; keep lengths < 2^21 (3-byte varints at most) by capping: once too long,
       stop nesting */
    uint8_t tags[3] = {0x32, 0x2a, 0x0a};
    for (int k = 0; k < 3; k++) {
      len = cap - pos;
      uint8_t v[10];
      int vn = 0;
      size_t x = len;
      do {
        v[vn++] = (uint8_t)((x & 0x7f) | (x > 0x7f ? 0x80 : 0));
        x >>= 7;
      } while (x);
      pos -= (size_t)vn;
      memcpy(buf + pos, v, (size_t)vn);
      buf[--pos] = tags[k];
    }
    if (cap - pos > cap - 64) break;
  }
  /* ModelProto field 7 (graph) */
  size_t len = cap - pos;
  uint8_t v[10];
  int vn = 0;
  do {
    v[vn++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
    len >>= 7;
  } while (len);
  pos -= (size_t)vn;
  memcpy(buf + pos, v, (size_t)vn);
  buf[--pos] = 0x3a;
  n = cap - pos;
  assert_int_equal(ge_graph_load_buffer(buf + pos, n, NULL, &g), GE_ERR_PARSE);
  assert_true(msg_has("nested"));
  free(buf);
}

static void test_sparse_initializer(void **state) {
  GeOnnx__GraphProto *g = graph("sp");
  GeOnnx__SparseTensorProto *sp = palloc(sizeof *sp);
  ge_onnx__sparse_tensor_proto__init(sp);
  int64_t dv[1] = {2}, di[2] = {2, 2};
  float vals[2] = {7, 9};
  int64_t idx[4] = {0, 1, 2, 0}; /* (0,1) and (2,0) of a 3x2 */
  sp->values = tensor_raw("sparse", 1, 1, dv, vals, sizeof vals);
  sp->indices = tensor_raw(NULL, 7, 2, di, idx, sizeof idx);
  sp->n_dims = 2;
  sp->dims = palloc(2 * sizeof(int64_t));
  sp->dims[0] = 3;
  sp->dims[1] = 2;
  g->sparse_initializer[g->n_sparse_initializer++] = sp;
  int64_t d[2] = {3, 2};
  g->output[g->n_output++] = vinfo("sparse", 1, 2, d, NULL);
  ge_graph *gg;
  ge_status st = load_mem(model(g, 17), NULL, &gg);
  if (st) print_error("%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  const ge_tensor *t = gg->values[ge_graph_find_value(gg, "sparse")].constant;
  const float want[6] = {0, 7, 0, 0, 9, 0};
  assert_int_equal(t->numel, 6);
  assert_memory_equal(t->data, want, sizeof want);
  ge_graph_free(gg);
  /* out of range index */
  idx[0] = 5;
  memcpy(sp->indices->raw_data.data, idx, sizeof idx);
  assert_int_equal(load_mem(model(g, 17), NULL, &gg), GE_ERR_PARSE);
  assert_true(msg_has("sparse"));
}

static void test_attr_kinds(void **state) {
  GeOnnx__ModelProto *m = simple_model();
  GeOnnx__NodeProto *n = m->graph->node[0];
  GeOnnx__AttributeProto *a = node_attr(n, "floats", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  a->n_floats = 2;
  a->floats = palloc(8);
  a->floats[0] = 1.5f;
  a->floats[1] = -2;
  a = node_attr(n, "strings", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  a->n_strings = 2;
  a->strings = palloc(2 * sizeof(ProtobufCBinaryData));
  a->strings[0] = (ProtobufCBinaryData){2, (uint8_t *)pstr("ab")};
  a->strings[1] = (ProtobufCBinaryData){0, (uint8_t *)pstr("")};
  int64_t d[1] = {2};
  int32_t iv[2] = {5, 6};
  a = node_attr(n, "tensor", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = tensor_raw(NULL, 6, 1, d, iv, sizeof iv);
  a = node_attr(n, "tensors", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
  a->n_tensors = 2;
  a->tensors = palloc(2 * sizeof(void *));
  a->tensors[0] = tensor_raw(NULL, 6, 1, d, iv, sizeof iv);
  a->tensors[1] = tensor_raw(NULL, 6, 0, d, iv, 4);
  a = node_attr(n, "i", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = -7;
  a = node_attr(n, "ref", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->ref_attr_name = pstr("outer_attr");
  ge_graph *g;
  assert_int_equal(load_mem(m, NULL, &g), GE_OK);
  const ge_node *add = &g->nodes[0];
  const float *fl;
  size_t cnt;
  assert_true(ge_node_attr_floats(add, "floats", &fl, &cnt));
  assert_int_equal(cnt, 2);
  assert_true(fl[0] == 1.5f);
  const ge_attr_value *s = ge_node_attr(add, "strings");
  assert_int_equal(s->kind, GE_ATTR_KIND_STRINGS);
  assert_string_equal(s->strings[0], "ab");
  assert_string_equal(s->strings[1], "");
  assert_int_equal(((int32_t *)ge_node_attr(add, "tensor")->t->data)[1], 6);
  assert_int_equal(ge_node_attr(add, "tensors")->n, 2);
  assert_int_equal(ge_node_attr(add, "tensors")->tensors[1]->rank, 0);
  assert_int_equal(ge_node_attr_int(add, "i", 0), -7);
  assert_string_equal(ge_node_attr(add, "ref")->ref_attr_name, "outer_attr");
  ge_graph_free(g);
  roundtrip_check(m);
  /* a TYPE_PROTO attribute without its type is rejected naming the node */
  node_attr(n, "tp", GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
  assert_int_equal(load_mem(m, NULL, &g), GE_ERR_PARSE);
  assert_true(msg_has("add0"));
}

static void test_functions(void **state) {
  GeOnnx__ModelProto *m = simple_model();
  GeOnnx__FunctionProto *f = palloc(sizeof *f);
  ge_onnx__function_proto__init(f);
  f->name = pstr("MyRelu");
  f->domain = pstr("local");
  f->n_input = 1;
  f->input = palloc(sizeof(char *));
  f->input[0] = pstr("X");
  f->n_output = 1;
  f->output = palloc(sizeof(char *));
  f->output[0] = pstr("Y");
  f->n_node = 1;
  f->node = palloc(sizeof(void *));
  f->node[0] = node("Relu", "inner", 1, (const char *[]){"X"}, 1, (const char *[]){"Y"});
  f->n_opset_import = 1;
  f->opset_import = m->opset_import;
  m->n_functions = 1;
  m->functions = palloc(sizeof(void *));
  m->functions[0] = f;
  /* use it */
  m->graph->node[1]->op_type = pstr("MyRelu");
  m->graph->node[1]->domain = pstr("local");
  GeOnnx__OperatorSetIdProto *o = palloc(sizeof *o);
  ge_onnx__operator_set_id_proto__init(o);
  o->domain = pstr("local");
  o->has_version = 1;
  o->version = 1;
  m->opset_import[m->n_opset_import++] = o;
  ge_graph *g;
  ge_status st = load_mem(m, NULL, &g);
  if (st) print_error("%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  assert_int_equal(g->n_functions, 1);
  assert_string_equal(g->functions[0].name, "MyRelu");
  assert_int_equal(g->functions[0].body->n_nodes, 1);
  assert_int_equal(g->functions[0].body->nodes[0].opset, 17);
  assert_int_equal(g->nodes[1].opset, 1);
  ge_graph_free(g);
  roundtrip_check(m);
}

static void test_builder_export(void **state) {
  /* a graph made through the IR directly (no imported metadata): ir_version 10 */
  ge_graph *g = ge_graph_new("built", NULL);
  assert_non_null(g);
  assert_int_equal(ge_graph_set_opset_version(g, "", 17), GE_OK);
  int32_t x;
  assert_int_equal(ge_graph_value(g, "x", &x), GE_OK);
  g->values[x].kind = GE_VALUE_INPUT;
  g->values[x].type.kind = GE_TYPE_TENSOR;
  g->values[x].type.dtype = GE_F32;
  g->values[x].type.shape.rank = 1;
  g->values[x].type.shape.dims[0] = GE_DIM_SYM(ge_graph_sym(g, "batch"));
  g->inputs = malloc(sizeof(int32_t));
  g->inputs[0] = x;
  g->n_inputs = 1;
  int32_t nid;
  assert_int_equal(ge_graph_append_node(g, "Relu", "", "r", (const char *[]){"x"}, 1,
                                        (const char *[]){"y"}, 1, &nid),
                   GE_OK);
  g->outputs = malloc(sizeof(int32_t));
  g->outputs[0] = ge_graph_find_value(g, "y");
  g->n_outputs = 1;
  void *b;
  size_t n;
  export_bytes(g, &b, &n);
  GeOnnx__ModelProto *m = ge_onnx__model_proto__unpack(NULL, n, b);
  assert_non_null(m);
  assert_int_equal(m->ir_version, 10);
  assert_string_equal(m->graph->input[0]->type->tensor_type->shape->dim[0]->dim_param, "batch");
  ge_onnx__model_proto__free_unpacked(m, NULL);
  free(b);
  ge_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_load_simple, setup, teardown),
      cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_roundtrip_metadata, setup, teardown),
      cmocka_unit_test_setup_teardown(test_all_dtypes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_string_tensor, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unsupported_dtype, setup, teardown),
      cmocka_unit_test_setup_teardown(test_size_mismatch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_external_data, setup, teardown),
      cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_opset_range, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_other_formats, setup, teardown),
      cmocka_unit_test_setup_teardown(test_undefined_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_subgraph_outer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deep_nesting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sparse_initializer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_attr_kinds, setup, teardown),
      cmocka_unit_test_setup_teardown(test_functions, setup, teardown),
      cmocka_unit_test_setup_teardown(test_builder_export, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
