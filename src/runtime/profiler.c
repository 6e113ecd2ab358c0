/* Chrome-trace profiling and .npy node dumps around the executor's steps (runtime/profiler.h). */
#include "runtime/profiler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/kernel.h"
#include "compiler/layout.h"
#include "ir/error.h"
#include "runtime/npy.h"

static const char trace_footer[] = "\n],\"displayTimeUnit\":\"ms\"}\n";

struct ge_observe {
  bool profiling, dump;
  uint32_t pid;
  pthread_mutex_t mu; /* guards fp and footer_at */
  FILE *fp;
  long footer_at;     /* where the footer starts: the next events go there */
  char path[1024];
  char dump_path[1024];
  atomic_uint_fast64_t runs;
};

static int mkdir_p(const char *dir) {
  char buf[1200];
  size_t n = strlen(dir);
  if (!n || n >= sizeof buf) return -1;
  memcpy(buf, dir, n + 1);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0777) && errno != EEXIST) return -1;
      *p = '/';
    }
  if (mkdir(buf, 0777) && errno != EEXIST) return -1;
  return 0;
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void put_json_str(FILE *fp, const char *s) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') {
      fputc('\\', fp);
      fputc(*p, fp);
    } else if (*p < 0x20) {
      fprintf(fp, "\\u%04x", *p);
    } else {
      fputc(*p, fp);
    }
  }
}

/* Writes the footer at footer_at and flushes: the file is a complete document. */
static bool close_document(ge_observe *o) {
  if (fseek(o->fp, o->footer_at, SEEK_SET)) return false;
  if (fputs(trace_footer, o->fp) == EOF) return false;
  return fflush(o->fp) == 0;
}

ge_status ge_observe_create(const ge_options *opts, uint32_t pid, ge_observe **out) {
  *out = NULL;
  if (!opts->profiling && !opts->dump) return GE_OK;
  ge_observe *o = calloc(1, sizeof *o);
  if (!o) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory creating the profiler");
  o->profiling = opts->profiling;
  o->dump = opts->dump;
  o->pid = pid;
  snprintf(o->path, sizeof o->path, "%s", opts->profiling_path);
  snprintf(o->dump_path, sizeof o->dump_path, "%s", opts->dump_path);
  atomic_init(&o->runs, 0);
  if (o->dump && mkdir_p(o->dump_path)) {
    ge_status st = ge_error(GE_ERR_IO, "ge.exec.dumpPath: cannot create directory '%s': %s", o->dump_path,
                            strerror(errno));
    free(o);
    return st;
  }
  if (o->profiling) {
    o->fp = fopen(o->path, "w");
    if (!o->fp) {
      ge_status st = ge_error(GE_ERR_IO, "ge.exec.profilingPath: cannot create '%s': %s", o->path,
                              strerror(errno));
      free(o);
      return st;
    }
    fprintf(o->fp,
            "{\"traceEvents\":[\n"
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":\"ge session %u\"}},\n"
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":\"stream 0\"}}",
            pid, pid, pid);
    o->footer_at = ftell(o->fp);
    if (o->footer_at < 0 || !close_document(o)) {
      ge_status st = ge_error(GE_ERR_IO, "ge.exec.profilingPath: cannot write '%s'", o->path);
      fclose(o->fp);
      free(o);
      return st;
    }
  }
  pthread_mutex_init(&o->mu, NULL);
  *out = o;
  return GE_OK;
}

void ge_observe_free(ge_observe *o) {
  if (!o) return;
  if (o->fp) fclose(o->fp);
  pthread_mutex_destroy(&o->mu);
  free(o);
}

ge_status ge_obs_run_begin(ge_observe *obs, const ge_plan *p, ge_obs_run *r) {
  memset(r, 0, sizeof *r);
  if (!obs) return GE_OK;
  r->obs = obs;
  r->plan = p;
  uint64_t run = atomic_fetch_add(&obs->runs, 1);
  if (obs->profiling) {
    size_t bytes;
    if (ge_mul_overflow_size(p->n_steps + 1, sizeof *r->steps, &bytes))
      return ge_error(GE_ERR_OUT_OF_MEMORY, "profiling: %zu steps overflow the record size", p->n_steps);
    r->steps = malloc(bytes);
    if (!r->steps) return ge_error(GE_ERR_OUT_OF_MEMORY, "profiling: out of memory for %zu steps", p->n_steps);
  }
  if (obs->dump) {
    int n = snprintf(r->dump_dir, sizeof r->dump_dir, "%s/%llu", obs->dump_path, (unsigned long long)run);
    if (n < 0 || (size_t)n >= sizeof r->dump_dir || mkdir_p(r->dump_dir)) {
      ge_status st = ge_error(GE_ERR_IO, "ge.exec.dumpPath: cannot create directory '%s/%llu'",
                              obs->dump_path, (unsigned long long)run);
      free(r->steps);
      r->steps = NULL;
      r->obs = NULL;
      return st;
    }
  }
  return GE_OK;
}

/* Output shapes as compact JSON, cut at the buffer's end with a valid closing. */
static void format_shapes(char *buf, size_t cap, const ge_step *s, ge_tensor *const *out) {
  size_t k = 0;
  buf[k++] = '[';
  for (uint32_t o = 0; o < s->n_out; o++) {
    char one[GE_MAX_RANK * 21 + 8];
    size_t m = 0;
    const ge_tensor *t = out[o];
    if (!t || ge_tensor_kind(t) != GE_KIND_TENSOR) {
      m = (size_t)snprintf(one, sizeof one, "null");
    } else {
      one[m++] = '[';
      for (int32_t d = 0; d < t->rank; d++)
        m += (size_t)snprintf(one + m, sizeof one - m, "%s%lld", d ? "," : "", (long long)t->dims[d]);
      one[m++] = ']';
      one[m] = '\0';
    }
    /* room for this, a comma and the closing "]\0" (or a "null" marker when cut) */
    if (k + m + 1 + 2 > cap) break;
    if (o) buf[k++] = ',';
    memcpy(buf + k, one, m);
    k += m;
  }
  buf[k++] = ']';
  buf[k] = '\0';
}

/* File names: letters, digits, '.', '-' and '_' kept, the rest '_'; no leading '.'. */
static void sanitize(const char *name, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = name ? name : ""; *p && k + 1 < cap; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || (c == '.' && k > 0);
    out[k++] = ok ? c : '_';
  }
  out[k] = '\0';
}

static ge_status dump_outputs(ge_obs_run *r, const ge_step *s, ge_tensor *const *out) {
  const ge_graph *g = r->plan->graph;
  for (uint32_t o = 0; o < s->n_out; o++) {
    const ge_tensor *t = out[o];
    if (!t || s->out[o] == GE_SLOT_NONE || ge_tensor_kind(t) != GE_KIND_TENSOR || t->dtype == GE_STRING)
      continue;
    uint32_t v = s->out[o];
    char name[256], path[1500], where[256];
    if (v < g->n_values && g->values[v].name && g->values[v].name[0])
      sanitize(g->values[v].name, name, sizeof name);
    else
      snprintf(name, sizeof name, "value_%u", v);
    snprintf(path, sizeof path, "%s/%s.npy", r->dump_dir, name);
    /* a value stored blocked / channels-last between kernels is written plain */
    int lay = r->plan->layout && v < r->plan->n_slots ? r->plan->layout[v] : GE_LAYOUT_PLAIN;
    ge_tensor plain;
    void *buf = NULL;
    if (lay != GE_LAYOUT_PLAIN && t->data) {
      buf = ge_aligned_alloc(t->nbytes ? t->nbytes : 1);
      if (!buf) return ge_error(GE_ERR_OUT_OF_MEMORY, "dump of %s: out of memory", ge_node_desc(s->node, where, sizeof where));
      ge_status cst = ge_layout_convert(buf, t->data, t->dims, t->rank, ge_dtype_size(t->dtype), lay, GE_LAYOUT_PLAIN);
      if (cst != GE_OK) {
        ge_aligned_free(buf);
        return ge_error_prefix(cst, "dump of %s, output %u: ", ge_node_desc(s->node, where, sizeof where), o);
      }
      ge_tensor_view(&plain, t);
      plain.data = buf;
      t = &plain;
    }
    ge_status st = ge_npy_write(path, t);
    ge_aligned_free(buf);
    if (st != GE_OK)
      return ge_error_prefix(st, "dump of %s, output %u: ", ge_node_desc(s->node, where, sizeof where), o);
  }
  return GE_OK;
}

ge_status ge_obs_step_done(ge_obs_run *r, size_t si, uint64_t start_ns, uint64_t end_ns,
                           ge_tensor *const *out) {
  if (!r->obs) return GE_OK;
  const ge_step *s = &r->plan->steps[si];
  if (r->steps && si < r->plan->n_steps) {
    ge_obs_step *e = &r->steps[r->n_done++];
    e->step = si;
    e->start_ns = start_ns;
    e->end_ns = end_ns;
    format_shapes(e->shapes, sizeof e->shapes, s, out);
  }
  if (r->obs->dump) return dump_outputs(r, s, out);
  return GE_OK;
}

ge_status ge_obs_run_end(ge_obs_run *r) {
  ge_observe *o = r->obs;
  ge_status st = GE_OK;
  if (o && o->profiling && r->steps) {
    pthread_mutex_lock(&o->mu);
    bool ok = fseek(o->fp, o->footer_at, SEEK_SET) == 0;
    for (size_t i = 0; ok && i < r->n_done; i++) {
      const ge_obs_step *e = &r->steps[i];
      const ge_node *n = r->plan->steps[e->step].node;
      fputs(",\n{\"name\":\"", o->fp);
      put_json_str(o->fp, n->name && n->name[0] ? n->name : n->op_type);
      fputs("\",\"cat\":\"op\",\"ph\":\"X\",", o->fp);
      fprintf(o->fp, "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%u,\"tid\":0,\"args\":{\"op\":\"", (double)e->start_ns / 1e3,
              (double)(e->end_ns - e->start_ns) / 1e3, o->pid);
      put_json_str(o->fp, n->op_type);
      const ge_step *ps = &r->plan->steps[e->step];
      char kname[128];
      if (ps->view) snprintf(kname, sizeof kname, "view");
      else ge_cpu_kernel_name(ps->k, ps->state, kname, sizeof kname);
      fputs("\",\"kernel\":\"", o->fp);
      put_json_str(o->fp, kname);
      fprintf(o->fp, "\",\"shapes\":%s,\"step\":%zu}}", e->shapes, e->step);
      ok = !ferror(o->fp);
    }
    long at = ok ? ftell(o->fp) : -1;
    if (at >= 0) o->footer_at = at;
    if (at < 0 || !close_document(o)) st = ge_error(GE_ERR_IO, "profiling: cannot write the trace '%s'", o->path);
    pthread_mutex_unlock(&o->mu);
  }
  free(r->steps);
  r->steps = NULL;
  r->obs = NULL;
  return st;
}
