/* Einsum equation parsing (see nn_einsum.h). */
#include "ops/nn_einsum.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int letter_index(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26; /* uppercase sorts first, as numpy */
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  return -1;
}

#define FAIL(...)                          \
  do {                                     \
    snprintf(err, err_cap, __VA_ARGS__);   \
    return GE_ERR_INVALID_ARGUMENT;        \
  } while (0)

ge_status ge_einsum_parse(const char *eq, size_t n_ops, const int32_t *ranks, ge_einsum_plan *p,
                          char *err, size_t err_cap) {
  memset(p, 0, sizeof *p);
  if (n_ops > GE_EINSUM_MAX_OPS) FAIL("too many operands");
  p->n_ops = n_ops;
  /* pass 1: per operand, the letter ids (-2 = ellipsis) */
  int terms[GE_EINSUM_MAX_OPS][GE_MAX_RANK + 1];
  size_t nterm[GE_EINSUM_MAX_OPS] = {0};
  bool has_ell[GE_EINSUM_MAX_OPS] = {0};
  const char *s = eq;
  size_t op = 0;
  int letter_count[52] = {0};
  bool explicit_out = false;
  for (;; s++) {
    if (*s == ' ') continue;
    if (*s == ',' || *s == '\0' || (*s == '-' && s[1] == '>')) {
      op++;
      if (*s == ',') {
        if (op >= n_ops) FAIL("more terms than the %zu inputs", n_ops);
        continue;
      }
      if (*s == '-') {
        explicit_out = true;
        s += 2;
      }
      break;
    }
    if (op >= n_ops) FAIL("more terms than the %zu inputs", n_ops);
    if (*s == '.') {
      if (s[1] != '.' || s[2] != '.') FAIL("a lone '.' (an ellipsis is '...')");
      if (has_ell[op]) FAIL("term %zu has two ellipses", op);
      has_ell[op] = true;
      if (nterm[op] >= GE_MAX_RANK + 1) FAIL("term %zu is too long", op);
      terms[op][nterm[op]++] = -2;
      s += 2;
      continue;
    }
    int li = letter_index(*s);
    if (li < 0) FAIL("unexpected character '%c'", *s);
    if (nterm[op] >= GE_MAX_RANK + 1) FAIL("term %zu is too long", op);
    terms[op][nterm[op]++] = li;
    letter_count[li]++;
  }
  if (op != n_ops) FAIL("%zu terms for %zu inputs", op, n_ops);
  /* ellipsis rank */
  size_t n_ell = 0;
  for (size_t i = 0; i < n_ops; i++) {
    size_t letters = nterm[i] - (has_ell[i] ? 1 : 0);
    if (has_ell[i]) {
      if ((size_t)ranks[i] < letters) FAIL("term %zu has %zu labels but input %zu has rank %d", i, letters, i, ranks[i]);
      size_t e = (size_t)ranks[i] - letters;
      if (e > n_ell) n_ell = e;
    } else if ((size_t)ranks[i] != letters) {
      FAIL("term %zu has %zu labels but input %zu has rank %d", i, letters, i, ranks[i]);
    }
  }
  /* label ids: ellipsis dims first, then letters in sorted order */
  int letter_label[52];
  size_t nl = n_ell;
  for (size_t e = 0; e < n_ell; e++) p->label_is_ell[e] = true;
  bool used[52] = {0};
  for (size_t i = 0; i < n_ops; i++)
    for (size_t t = 0; t < nterm[i]; t++)
      if (terms[i][t] >= 0) used[terms[i][t]] = true;
  for (int li = 0; li < 52; li++) {
    letter_label[li] = -1;
    if (used[li]) {
      if (nl >= GE_EINSUM_MAX_LABELS) FAIL("too many labels");
      letter_label[li] = (int)nl++;
    }
  }
  p->n_labels = nl;
  p->n_ell = n_ell;
  for (size_t i = 0; i < n_ops; i++) {
    size_t d = 0;
    size_t e = has_ell[i] ? (size_t)ranks[i] - (nterm[i] - 1) : 0;
    for (size_t t = 0; t < nterm[i]; t++) {
      if (terms[i][t] == -2) {
        for (size_t k = 0; k < e; k++) p->op_labels[i][d++] = (int)(n_ell - e + k);
      } else {
        p->op_labels[i][d++] = letter_label[terms[i][t]];
      }
    }
    p->op_rank[i] = ranks[i];
  }
  /* output */
  if (explicit_out) {
    bool seen[52] = {0}, ell = false;
    for (; *s; s++) {
      if (*s == ' ') continue;
      if (*s == '.') {
        if (s[1] != '.' || s[2] != '.') FAIL("a lone '.' in the output");
        if (ell) FAIL("two ellipses in the output");
        ell = true;
        for (size_t k = 0; k < n_ell; k++) {
          if (p->n_out >= GE_MAX_RANK) FAIL("output rank too large");
          p->out_labels[p->n_out++] = (int)k;
        }
        s += 2;
        continue;
      }
      int li = letter_index(*s);
      if (li < 0) FAIL("unexpected character '%c' in the output", *s);
      if (!used[li]) FAIL("output label '%c' does not appear in any input", *s);
      if (seen[li]) FAIL("output label '%c' appears twice", *s);
      seen[li] = true;
      if (p->n_out >= GE_MAX_RANK) FAIL("output rank too large");
      p->out_labels[p->n_out++] = letter_label[li];
    }
    if (!ell && n_ell > 0) {
      /* ellipsis dims not in the output are summed only if they are all size 1; numpy
         requires them in the output, ONNX does too */
      FAIL("the inputs use '...' but the output does not");
    }
  } else {
    for (size_t k = 0; k < n_ell; k++) p->out_labels[p->n_out++] = (int)k;
    for (int li = 0; li < 52; li++)
      if (letter_count[li] == 1) {
        if (p->n_out >= GE_MAX_RANK) FAIL("output rank too large");
        p->out_labels[p->n_out++] = letter_label[li];
      }
  }
  return GE_OK;
}
