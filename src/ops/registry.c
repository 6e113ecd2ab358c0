/* The schema registry: every family's table, looked up by (domain, name, opset). */
#include <string.h>

#include "ops/op.h"

extern const ge_op_schema ge_schemas_elementwise[];
extern const ge_op_schema ge_schemas_nn[];
extern const ge_op_schema ge_schemas_shape[];
extern const ge_op_schema ge_schemas_reduce[];
extern const ge_op_schema ge_schemas_fused[];
extern const ge_op_schema ge_schemas_nn2[];
extern const ge_op_schema ge_schemas_quant[];
extern const ge_op_schema ge_schemas_rnn[];
extern const ge_op_schema ge_schemas_signal[];
extern const ge_op_schema ge_schemas_text[];
extern const ge_op_schema ge_schemas_random[];
extern const ge_op_schema ge_schemas_misc[];
extern const ge_op_schema ge_schemas_ge[];
extern const ge_op_schema ge_schemas_control[];
extern const ge_op_schema ge_schemas_sequence[];

static const ge_op_schema *const families[] = {
    ge_schemas_elementwise,
    ge_schemas_nn,
    ge_schemas_shape,
    ge_schemas_reduce,
    ge_schemas_fused,
    ge_schemas_nn2,
    ge_schemas_quant,
    ge_schemas_rnn,
    ge_schemas_signal,
    ge_schemas_text,
    ge_schemas_random,
    ge_schemas_misc,
    ge_schemas_ge,
    ge_schemas_control,
    ge_schemas_sequence,
};

static bool domain_eq(const char *a, const char *b) {
  if (!a || !strcmp(a, "ai.onnx")) a = "";
  if (!b || !strcmp(b, "ai.onnx")) b = "";
  return strcmp(a, b) == 0;
}

const ge_op_schema *ge_op_find_schema(const char *domain, const char *name, int64_t opset) {
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const ge_op_schema *s = families[f]; s->name; s++)
      if (!strcmp(s->name, name) && domain_eq(s->domain, domain) && opset >= s->since &&
          (s->until == 0 || opset <= s->until))
        return s;
  return NULL;
}

size_t ge_op_schema_count(void) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const ge_op_schema *s = families[f]; s->name; s++) n++;
  return n;
}

const ge_op_schema *ge_op_schema_at(size_t i) {
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const ge_op_schema *s = families[f]; s->name; s++)
      if (i-- == 0) return s;
  return NULL;
}

static bool in_list(const char *name, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(name, *list)) return true;
  return false;
}

bool ge_op_has_side_effects(const ge_node *n) {
  static const char *const ge_ops[] = {"Summary", "Save",      "Callback",
                                       "Assign",  "AssignAdd", "AssignSub", NULL};
  return !strcmp(n->domain, "ai.ge") && in_list(n->op_type, ge_ops);
}

bool ge_op_is_random(const ge_node *n) {
  static const char *const onnx_ops[] = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                         "RandomUniformLike", "Multinomial",   "Bernoulli", NULL};
  return domain_eq(n->domain, "") && in_list(n->op_type, onnx_ops);
}
