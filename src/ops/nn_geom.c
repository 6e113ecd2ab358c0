/* Window geometry of Conv, ConvTranspose and pooling (see nn_geom.h). */
#include "ops/nn_geom.h"

#include <stdio.h>
#include <string.h>

static ge_status geom_fail(const ge_node *n, const char *what) {
  char where[256];
  return ge_error(GE_ERR_INVALID_ARGUMENT, "%s: %s", ge_node_desc(n, where, sizeof where), what);
}

static ge_status ints_attr(const ge_node *n, const char *name, int64_t *dst, size_t cap,
                           bool *has, size_t *count) {
  const int64_t *d;
  size_t c;
  *has = ge_node_attr_ints(n, name, &d, &c);
  if (count) *count = c;
  if (!*has) return GE_OK;
  if (c > cap) {
    char where[256];
    return ge_error(GE_ERR_INVALID_ARGUMENT, "%s: attribute %s has %zu entries, at most %zu allowed",
                    ge_node_desc(n, where, sizeof where), name, c, cap);
  }
  memcpy(dst, d, c * sizeof *d);
  return GE_OK;
}

ge_status ge_nn_win_parse(const ge_node *n, bool need_kernel, ge_nn_win_attrs *a) {
  memset(a, 0, sizeof *a);
  char where[256];
  const char *ap = ge_node_attr_string(n, "auto_pad", "NOTSET");
  if (!strcmp(ap, "NOTSET") || !ap[0]) a->auto_pad = GE_PAD_NOTSET;
  else if (!strcmp(ap, "SAME_UPPER")) a->auto_pad = GE_PAD_SAME_UPPER;
  else if (!strcmp(ap, "SAME_LOWER")) a->auto_pad = GE_PAD_SAME_LOWER;
  else if (!strcmp(ap, "VALID")) a->auto_pad = GE_PAD_VALID;
  else
    return ge_error(GE_ERR_INVALID_ARGUMENT, "%s: auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                    ge_node_desc(n, where, sizeof where), ap);
  size_t nk = 0, ns = 0, nd = 0, np = 0, nop = 0;
  GE_CHECK(ints_attr(n, "kernel_shape", a->kernel, GE_NN_MAX_SP, &a->has_kernel, &nk));
  GE_CHECK(ints_attr(n, "strides", a->strides, GE_NN_MAX_SP, &a->has_strides, &ns));
  GE_CHECK(ints_attr(n, "dilations", a->dilations, GE_NN_MAX_SP, &a->has_dilations, &nd));
  GE_CHECK(ints_attr(n, "pads", a->pads, 2 * GE_NN_MAX_SP, &a->has_pads, &np));
  GE_CHECK(ints_attr(n, "output_padding", a->output_padding, GE_NN_MAX_SP, &a->has_output_padding, &nop));
  GE_CHECK(ints_attr(n, "output_shape", a->output_shape, GE_NN_MAX_SP, &a->has_output_shape, &a->n_output_shape));
  if (need_kernel && !a->has_kernel) return geom_fail(n, "attribute kernel_shape is required");
  if (a->has_kernel) a->nsp = nk;
  else if (a->has_strides) a->nsp = ns;
  else if (a->has_dilations) a->nsp = nd;
  else if (a->has_pads) a->nsp = np / 2;
  if ((a->has_strides && ns != a->nsp) || (a->has_dilations && nd != a->nsp) ||
      (a->has_pads && np != 2 * a->nsp))
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "%s: kernel_shape/strides/dilations/pads lengths disagree (%zu, %zu, %zu, %zu)",
                    ge_node_desc(n, where, sizeof where), nk, ns, nd, np);
  a->group = ge_node_attr_int(n, "group", 1);
  if (a->group < 1) return geom_fail(n, "attribute group must be >= 1");
  a->ceil_mode = ge_node_attr_int(n, "ceil_mode", 0) != 0;
  return GE_OK;
}

ge_status ge_nn_win_resolve(const ge_node *n, ge_nn_win_attrs *a, size_t nsp, const int64_t *kernel) {
  char where[256];
  if (nsp > GE_NN_MAX_SP) return geom_fail(n, "too many spatial dimensions");
  if (a->nsp && a->nsp != nsp && (a->has_kernel || a->has_strides || a->has_dilations || a->has_pads))
    return ge_error(GE_ERR_SHAPE, "%s: attributes describe %zu spatial dims but the input has %zu",
                    ge_node_desc(n, where, sizeof where), a->nsp, nsp);
  a->nsp = nsp;
  for (size_t i = 0; i < nsp; i++) {
    if (!a->has_kernel) a->kernel[i] = kernel ? kernel[i] : -1;
    if (!a->has_strides) a->strides[i] = 1;
    if (!a->has_dilations) a->dilations[i] = 1;
    if (!a->has_pads) a->pads[i] = a->pads[nsp + i] = 0;
    if (!a->has_output_padding) a->output_padding[i] = 0;
    if (a->strides[i] < 1 || a->dilations[i] < 1 || a->pads[i] < 0 || a->pads[nsp + i] < 0 ||
        (a->kernel[i] < 1 && a->kernel[i] != -1))
      return ge_error(GE_ERR_INVALID_ARGUMENT,
                      "%s: spatial dim %zu has kernel %lld stride %lld dilation %lld pads %lld,%lld (need kernel/stride/dilation >= 1, pads >= 0)",
                      ge_node_desc(n, where, sizeof where), i, (long long)a->kernel[i],
                      (long long)a->strides[i], (long long)a->dilations[i], (long long)a->pads[i],
                      (long long)a->pads[nsp + i]);
  }
  return GE_OK;
}

ge_status ge_nn_win_out(const ge_node *n, const ge_nn_win_attrs *a, size_t i, int64_t in,
                        bool ceil, int64_t *out, int64_t *pb, int64_t *pe) {
  char where[256];
  int64_t s = a->strides[i], ek = (a->kernel[i] - 1) * a->dilations[i] + 1;
  int64_t b = a->pads[i], e = a->pads[a->nsp + i], o;
  switch (a->auto_pad) {
    case GE_PAD_SAME_UPPER:
    case GE_PAD_SAME_LOWER: {
      o = (in + s - 1) / s;
      int64_t total = (o - 1) * s + ek - in;
      if (total < 0) total = 0;
      if (a->auto_pad == GE_PAD_SAME_UPPER) {
        b = total / 2;
        e = total - b;
      } else {
        e = total / 2;
        b = total - e;
      }
      break;
    }
    case GE_PAD_VALID:
      b = e = 0;
      /* fall through */
    default: {
      int64_t span = in + b + e - ek;
      if (span < 0)
        return ge_error(GE_ERR_SHAPE,
                        "%s: spatial dim %zu: window %lld (kernel %lld, dilation %lld) exceeds padded input %lld",
                        ge_node_desc(n, where, sizeof where), i, (long long)ek, (long long)a->kernel[i],
                        (long long)a->dilations[i], (long long)(in + b + e));
      if (ceil) {
        o = (span + s - 1) / s + 1;
        /* the last window must start inside the input or the begin padding */
        if ((o - 1) * s >= in + b) o--;
      } else {
        o = span / s + 1;
      }
    }
  }
  *out = o;
  if (pb) *pb = b;
  if (pe) *pe = e;
  return GE_OK;
}

ge_status ge_nn_convt_out(const ge_node *n, const ge_nn_win_attrs *a, size_t i, int64_t in,
                          int64_t *out, int64_t *pb, int64_t *pe) {
  char where[256];
  int64_t s = a->strides[i], ek = (a->kernel[i] - 1) * a->dilations[i] + 1;
  int64_t op = a->output_padding[i];
  int64_t full = s * (in - 1) + op + ek;
  int64_t b = a->pads[i], e = a->pads[a->nsp + i], o;
  if (a->has_output_shape) {
    /* output_shape may list all dims or only the spatial ones */
    size_t off = a->n_output_shape == a->nsp + 2 ? 2 : 0;
    if (a->n_output_shape != a->nsp && a->n_output_shape != a->nsp + 2)
      return geom_fail(n, "attribute output_shape must have one entry per spatial dim");
    o = a->output_shape[off + i];
    int64_t total = full - o;
    if (total < 0) total = 0; /* extra outputs get zeros beyond the computed region */
    if (a->auto_pad == GE_PAD_SAME_UPPER) {
      b = total / 2;
      e = total - b;
    } else {
      e = total / 2;
      b = total - e;
    }
  } else if (a->auto_pad == GE_PAD_SAME_UPPER || a->auto_pad == GE_PAD_SAME_LOWER) {
    o = in * s;
    int64_t total = full - o;
    if (total < 0) total = 0;
    if (a->auto_pad == GE_PAD_SAME_UPPER) {
      b = total / 2;
      e = total - b;
    } else {
      e = total / 2;
      b = total - e;
    }
  } else {
    if (a->auto_pad == GE_PAD_VALID) b = e = 0;
    o = full - b - e;
  }
  if (o < 0)
    return ge_error(GE_ERR_SHAPE, "%s: spatial dim %zu: output extent %lld is negative",
                    ge_node_desc(n, where, sizeof where), i, (long long)o);
  *out = o;
  if (pb) *pb = b;
  if (pe) *pe = e;
  return GE_OK;
}
