/* Tensors: aligned storage, creation/wrapping with checked sizes, strings, clone, reads. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ir/dtype_lowp.h"
#include "ir/ir.h"

/* Blocks of GE_HUGE bytes or more (packed weights, a run's activation arena, kernel scratch)
   start on a 2 MiB boundary and their whole 2 MiB pages are advised for transparent huge
   pages: a weight stream or a pass over the arena then takes one TLB entry per 2 MiB instead
   of 512.  Debian's kernels default to THP "madvise", where nothing else gets huge pages.
   End-to-end, `ge bench` p50 alternating builds (scratch): ResNet-50 0.956-0.971x, GoogLeNet
   0.956-0.980x, BERT-base 0.977-0.980x at 1 thread; +5 MiB peak RSS on ResNet-50, none on the
   others.  The system's setting still rules ("never" turns it off), and a process may opt out with
   prctl(PR_SET_THP_DISABLE).  The tail past the last whole page keeps small pages, so no block
   grows its resident size by more than it uses. */
#define GE_HUGE ((size_t)2 << 20)

void *ge_aligned_alloc(size_t size) {
  void *p = NULL;
  if (size == 0) size = 1; /* a unique pointer even for empty tensors */
  if (size >= GE_HUGE) {
    if (posix_memalign(&p, GE_HUGE, size) != 0) return NULL;
    (void)madvise(p, size / GE_HUGE * GE_HUGE, MADV_HUGEPAGE); /* advice only: failure is harmless */
    return p;
  }
  if (posix_memalign(&p, 64, size) != 0) return NULL;
  return p;
}

void ge_aligned_free(void *p) { free(p); }

/* Packed constants under GE_HUGE bytes (most of a CNN's weights, a bf16 model's 768x768
   projections) would each fall short of a whole huge page; they are carved instead, 64-byte
   aligned, from shared slabs of GE_SLAB bytes taken from ge_aligned_alloc, so that they sit on
   huge pages too (GoogLeNet 0.959x, BERT-base bf16 0.948x `ge bench` p50 at 1 thread, +2 MiB
   RSS).  A slab goes back to the system when its last block is freed; freed blocks are not
   reused before that, so a slab that holds blocks of two plans (the one open when a plan
   finished packing, or all of them for plans packed at the same time) stays resident until
   both are released.  Under AddressSanitizer (GE_CONST_SLABS, ir.h) every block is its own
   allocation, so that an overrun between neighbours is still caught. */
#define GE_SLAB ((size_t)16 << 20)

typedef struct ge_slab {
  char *base;
  size_t used, live; /* bytes handed out from base; blocks not yet freed */
  struct ge_slab *next;
} ge_slab;
static pthread_mutex_t g_slab_mu = PTHREAD_MUTEX_INITIALIZER;
static ge_slab *g_slabs; /* the first is the open one */

void *ge_const_alloc(size_t size) {
  if (!GE_CONST_SLABS || size >= GE_HUGE) return ge_aligned_alloc(size);
  size_t need = size ? (size + 63) / 64 * 64 : 64;
  void *p = NULL;
  pthread_mutex_lock(&g_slab_mu);
  ge_slab *s = g_slabs;
  if (!s || GE_SLAB - s->used < need) {
    s = malloc(sizeof *s);
    char *base = s ? ge_aligned_alloc(GE_SLAB) : NULL;
    if (!base) {
      free(s);
      s = NULL;
    } else {
      *s = (ge_slab){.base = base, .next = g_slabs};
      g_slabs = s;
    }
  }
  if (s) {
    p = s->base + s->used;
    s->used += need;
    s->live++;
  }
  pthread_mutex_unlock(&g_slab_mu);
  /* no room for a new slab: the block alone may still fit (ge_const_free tells it from slab
     blocks by address) */
  return p ? p : ge_aligned_alloc(size);
}

void ge_const_free(void *p) {
  if (!p) return;
  pthread_mutex_lock(&g_slab_mu);
  ge_slab **at = &g_slabs;
  while (*at && !((char *)p >= (*at)->base && (char *)p < (*at)->base + GE_SLAB)) at = &(*at)->next;
  ge_slab *s = *at;
  if (s && --s->live == 0) { /* its pages go back to the system */
    *at = s->next;
    ge_aligned_free(s->base);
    free(s);
  }
  pthread_mutex_unlock(&g_slab_mu);
  if (!s) ge_aligned_free(p);
}

static void dims_str(const int64_t *dims, int32_t rank, char *buf, size_t cap) {
  size_t pos = 0;
  int w = snprintf(buf, cap, "[");
  pos = w > 0 ? (size_t)w : 0;
  for (int32_t i = 0; dims && i < rank && pos < cap; i++) {
    w = snprintf(buf + pos, cap - pos, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (w < 0) return;
    pos += (size_t)w;
  }
  if (pos < cap) snprintf(buf + pos, cap - pos, "]");
}

/* Validates dtype/rank/dims and computes numel and nbytes with overflow checks. */
static ge_status check_layout(ge_dtype dt, const int64_t *dims, int64_t rank, size_t *numel,
                              size_t *nbytes) {
  if ((int)dt < 0 || dt >= GE_DTYPE_COUNT)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: invalid dtype %d", (int)dt);
  if (rank < 0 || rank > GE_MAX_RANK)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: rank %lld is out of range (max %d)",
                    (long long)rank, GE_MAX_RANK);
  if (rank > 0 && !dims)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: dims is NULL for rank %lld",
                    (long long)rank);
  size_t n = 1;
  char buf[512];
  for (int64_t i = 0; i < rank; i++) {
    if (dims[i] < 0) {
      dims_str(dims, (int32_t)rank, buf, sizeof buf);
      return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: dims %s: dim %lld is negative (%lld)",
                      buf, (long long)i, (long long)dims[i]);
    }
    if ((uint64_t)dims[i] > (uint64_t)SIZE_MAX || ge_mul_overflow_size(n, (size_t)dims[i], &n)) {
      dims_str(dims, (int32_t)rank, buf, sizeof buf);
      return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: dims %s: element count overflows", buf);
    }
  }
  size_t nb;
  if (ge_mul_overflow_size(n, ge_dtype_size(dt), &nb)) {
    dims_str(dims, (int32_t)rank, buf, sizeof buf);
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: dims %s of %s: byte size overflows", buf,
                    ge_dtype_name(dt));
  }
  *numel = n;
  *nbytes = nb;
  return GE_OK;
}

static void set_layout(ge_tensor *t, ge_dtype dt, const int64_t *dims, int32_t rank, size_t numel,
                       size_t nbytes) {
  memset(t, 0, sizeof *t);
  t->dtype = dt;
  t->rank = rank;
  for (int32_t i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->numel = numel;
  t->nbytes = nbytes;
}

static ge_status init_alloc(ge_tensor *t, ge_dtype dt, const int64_t *dims, int32_t rank, bool zero) {
  if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_init_alloc: NULL tensor");
  size_t numel, nbytes;
  GE_CHECK(check_layout(dt, dims, rank, &numel, &nbytes));
  void *data = ge_aligned_alloc(nbytes);
  if (!data) {
    char buf[512];
    dims_str(dims, rank, buf, sizeof buf);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor: cannot allocate %zu bytes for %s %s", nbytes,
                    ge_dtype_name(dt), buf);
  }
  if (zero || dt == GE_STRING) memset(data, 0, nbytes); /* strings: NULL pointers until set */
  set_layout(t, dt, dims, rank, numel, nbytes);
  t->data = data;
  t->owns = true;
  return GE_OK;
}

ge_status ge_tensor_init_alloc(ge_tensor *t, ge_dtype dt, const int64_t *dims, int32_t rank) {
  return init_alloc(t, dt, dims, rank, true);
}

ge_status ge_tensor_init_alloc_uninit(ge_tensor *t, ge_dtype dt, const int64_t *dims, int32_t rank) {
  return init_alloc(t, dt, dims, rank, false);
}

void ge_tensor_release_storage(ge_tensor *t) {
  if (!t) return;
  if (t->owns && t->dtype == GE_STRING && t->data) {
    char **s = (char **)t->data;
    for (size_t i = 0; i < t->numel; i++) free(s[i]);
  }
  if (t->release) t->release(t->data, t->release_ctx);
  if (t->owns) ge_aligned_free(t->data);
  t->data = NULL;
  t->release = NULL;
  t->release_ctx = NULL;
  t->owns = false;
}

void ge_tensor_view(ge_tensor *dst, const ge_tensor *src) {
  if (!dst) return;
  if (!src) {
    memset(dst, 0, sizeof *dst);
    return;
  }
  *dst = *src;
  dst->release = NULL;
  dst->release_ctx = NULL;
  dst->owns = false;
}

ge_status ge_tensor_create(ge_dtype dt, const int64_t *dims, size_t rank, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_create: out is NULL");
  *out = NULL;
  if (rank > GE_MAX_RANK)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: rank %zu is out of range (max %d)", rank,
                    GE_MAX_RANK);
  ge_tensor *t = malloc(sizeof *t);
  if (!t) return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor: out of memory");
  ge_status st = ge_tensor_init_alloc(t, dt, dims, (int32_t)rank);
  if (st != GE_OK) {
    free(t);
    return st;
  }
  *out = t;
  return GE_OK;
}

ge_status ge_tensor_wrap(ge_dtype dt, const int64_t *dims, size_t rank, void *data, size_t nbytes,
                         void (*release)(void *data, void *ctx), void *ctx, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_wrap: out is NULL");
  *out = NULL;
  if (dt == GE_STRING)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_wrap: string tensors cannot wrap memory");
  if (rank > GE_MAX_RANK)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor: rank %zu is out of range (max %d)", rank,
                    GE_MAX_RANK);
  size_t numel, nb;
  GE_CHECK(check_layout(dt, dims, (int64_t)rank, &numel, &nb));
  if (nb != nbytes) {
    char buf[512];
    dims_str(dims, (int32_t)rank, buf, sizeof buf);
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "ge_tensor_wrap: nbytes %zu does not match %s %s (%zu bytes)", nbytes,
                    ge_dtype_name(dt), buf, nb);
  }
  if (!data && nbytes > 0)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_wrap: data is NULL for %zu bytes", nbytes);
  ge_tensor *t = malloc(sizeof *t);
  if (!t) return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor: out of memory");
  set_layout(t, dt, dims, (int32_t)rank, numel, nb);
  t->data = data;
  t->release = release;
  t->release_ctx = ctx;
  t->owns = false;
  *out = t;
  return GE_OK;
}

void ge_tensor_free(ge_tensor *t) {
  if (!t) return;
  ge_tensor_release_storage(t);
  free(t);
}

ge_dtype ge_tensor_dtype(const ge_tensor *t) { return t ? t->dtype : (ge_dtype)0; }
size_t ge_tensor_rank(const ge_tensor *t) { return t && t->rank > 0 ? (size_t)t->rank : 0; }
const int64_t *ge_tensor_dims(const ge_tensor *t) { return t ? t->dims : NULL; }
size_t ge_tensor_numel(const ge_tensor *t) { return t ? t->numel : 0; }
size_t ge_tensor_nbytes(const ge_tensor *t) { return t ? t->nbytes : 0; }
void *ge_tensor_data(const ge_tensor *t) { return t ? t->data : NULL; }

ge_status ge_tensor_set_string(ge_tensor *t, size_t i, const char *s) {
  if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_set_string: NULL tensor");
  if (t->dtype != GE_STRING)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_set_string: tensor dtype is %s, not string",
                    ge_dtype_name(t->dtype));
  if (i >= t->numel)
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "ge_tensor_set_string: index %zu is out of range (%zu elements)", i, t->numel);
  if (!t->owns)
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "ge_tensor_set_string: the tensor does not own its strings (a view)");
  char *c = NULL;
  if (s) {
    c = strdup(s);
    if (!c) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_tensor_set_string: out of memory");
  }
  char **d = (char **)t->data;
  free(d[i]);
  d[i] = c;
  return GE_OK;
}

ge_status ge_tensor_clone(const ge_tensor *t, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_clone: out is NULL");
  *out = NULL;
  if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_clone: NULL tensor");
  ge_tensor *c;
  GE_CHECK(ge_tensor_create(t->dtype, t->dims, (size_t)(t->rank > 0 ? t->rank : 0), &c));
  if (c->nbytes != t->nbytes) {
    ge_tensor_free(c);
    return ge_error(GE_ERR_INTERNAL, "ge_tensor_clone: inconsistent source tensor (%zu vs %zu bytes)",
                    t->nbytes, c->nbytes);
  }
  if (t->dtype == GE_STRING) {
    const char *const *src = (const char *const *)t->data;
    char **dst = (char **)c->data;
    for (size_t i = 0; src && i < c->numel; i++) {
      if (!src[i]) continue;
      dst[i] = strdup(src[i]);
      if (!dst[i]) {
        ge_tensor_free(c);
        return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_tensor_clone: out of memory");
      }
    }
  } else if (c->nbytes && t->data) {
    memcpy(c->data, t->data, c->nbytes);
  }
  *out = c;
  return GE_OK;
}

/* ------------------------------------------------------------------ shared storage */

/* The reference-counted block behind shared tensors: the original storage and how to free it;
   optionally the model file the bytes also sit in (ge_tensor_set_backing), so that they can be
   dropped from memory while no one reads them and read back on demand. */
typedef struct shared_store {
  atomic_size_t refs;
  void *data;
  void (*release)(void *data, void *ctx);
  void *release_ctx;
  bool owns;
  /* reclaimable: set once, before the storage is shared with another thread */
  ge_file_ref *backing;
  uint64_t offset;
  size_t nbytes;
  pthread_mutex_t mu; /* guards pins and evicted (initialised with the backing) */
  size_t pins, soft_pins;
  bool evicted;
} shared_store;

struct ge_file_ref {
  atomic_size_t refs;
  int fd;
  char *path;
  struct stat st; /* at open: a changed file is not read back */
};

ge_status ge_file_ref_new(int fd, const char *path, ge_file_ref **out) {
  *out = NULL;
  ge_file_ref *f = calloc(1, sizeof *f);
  if (f) f->path = strdup(path ? path : "<file>");
  if (!f || !f->path) {
    if (f) free(f);
    close(fd);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "%s: out of memory", path ? path : "<file>");
  }
  if (fstat(fd, &f->st) != 0) {
    ge_status st = ge_error(GE_ERR_IO, "%s: stat failed: %s", f->path, strerror(errno));
    close(fd);
    free(f->path);
    free(f);
    return st;
  }
  atomic_init(&f->refs, 1);
  f->fd = fd;
  *out = f;
  return GE_OK;
}

void ge_file_ref_unref(ge_file_ref *f) {
  if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1) return;
  close(f->fd);
  free(f->path);
  free(f);
}

int ge_file_ref_fd(const ge_file_ref *f) { return f ? f->fd : -1; }

static void shared_release(void *data, void *ctx) {
  (void)data;
  shared_store *s = ctx;
  if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  if (s->release) s->release(s->data, s->release_ctx);
  if (s->owns) ge_aligned_free(s->data);
  if (s->backing) {
    pthread_mutex_destroy(&s->mu);
    ge_file_ref_unref(s->backing);
  }
  free(s);
}

bool ge_tensor_is_shared(const ge_tensor *t) { return t && t->release == shared_release; }

ge_status ge_tensor_make_shared(ge_tensor *t) {
  if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_make_shared: NULL tensor");
  if (t->release == shared_release || t->dtype == GE_STRING) return GE_OK;
  shared_store *s = calloc(1, sizeof *s);
  if (!s) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_tensor_make_shared: out of memory");
  atomic_init(&s->refs, 1);
  s->data = t->data;
  s->release = t->release;
  s->release_ctx = t->release_ctx;
  s->owns = t->owns;
  t->release = shared_release;
  t->release_ctx = s;
  t->owns = false;
  return GE_OK;
}

/* ------------------------------------------------------------------ reclaimable weights */

static shared_store *backed_store(const ge_tensor *t) {
  if (!t || t->release != shared_release) return NULL;
  shared_store *s = t->release_ctx;
  return s && s->backing ? s : NULL;
}

bool ge_tensor_has_backing(const ge_tensor *t) { return backed_store(t) != NULL; }

bool ge_tensor_is_evicted(const ge_tensor *t) {
  shared_store *s = backed_store(t);
  if (!s) return false;
  pthread_mutex_lock(&s->mu);
  bool e = s->evicted;
  pthread_mutex_unlock(&s->mu);
  return e;
}

ge_status ge_tensor_set_backing(ge_tensor *t, ge_file_ref *f, uint64_t off) {
  if (!t || !f || t->release != shared_release)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_set_backing: not a shared tensor");
  shared_store *s = t->release_ctx;
  if (s->backing || s->data != t->data) return GE_OK; /* already backed, or a view into it */
  if (pthread_mutex_init(&s->mu, NULL) != 0)
    return ge_error(GE_ERR_INTERNAL, "ge_tensor_set_backing: cannot create a mutex");
  atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
  s->backing = f;
  s->offset = off;
  s->nbytes = t->nbytes;
  return GE_OK;
}

size_t ge_l2_cache_bytes(void) {
  long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return v > 0 ? (size_t)v : (size_t)1 << 20;
}

uint64_t ge_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ge_hash64(const void *data, size_t size) {
  const uint8_t *p = data;
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)size;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  return h;
}

/* The whole pages inside [data, data + nbytes): what eviction drops and a pin reads back. */
static bool inner_pages(const shared_store *s, uintptr_t *lo, uintptr_t *hi) {
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096u;
  uintptr_t b = (uintptr_t)s->data, e = b + s->nbytes;
  *lo = (b + page - 1) / page * page;
  *hi = e / page * page;
  return *hi > *lo;
}

/* Reads the evicted pages back from the file (s->mu held). */
static ge_status restore_locked(shared_store *s) {
  uintptr_t lo, hi;
  if (!s->evicted || !inner_pages(s, &lo, &hi)) {
    s->evicted = false;
    return GE_OK;
  }
  const ge_file_ref *f = s->backing;
  struct stat now;
  if (fstat(f->fd, &now) != 0 || now.st_size != f->st.st_size ||
      now.st_mtim.tv_sec != f->st.st_mtim.tv_sec || now.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec)
    return ge_error(GE_ERR_IO,
                    "%s: the model file changed on disk since it was loaded; a weight of %zu bytes "
                    "at offset %llu that was dropped from memory cannot be read back",
                    f->path, s->nbytes, (unsigned long long)s->offset);
  size_t n = (size_t)(hi - lo), done = 0;
  uint64_t foff = s->offset + (uint64_t)(lo - (uintptr_t)s->data);
  while (done < n) {
    ssize_t r = pread(f->fd, (char *)lo + done, n - done, (off_t)(foff + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return ge_error(GE_ERR_IO, "%s: reading back a weight (%zu bytes at offset %llu) failed: %s",
                      f->path, s->nbytes, (unsigned long long)s->offset,
                      r < 0 ? strerror(errno) : "unexpected end of file");
    done += (size_t)r;
  }
  s->evicted = false;
  return GE_OK;
}

static ge_status pin(const ge_tensor *t, bool soft) {
  shared_store *s = backed_store(t);
  if (!s) return GE_OK;
  pthread_mutex_lock(&s->mu);
  ge_status st = restore_locked(s);
  if (st == GE_OK) {
    if (soft)
      s->soft_pins++;
    else
      s->pins++;
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

static void unpin(const ge_tensor *t, bool soft) {
  shared_store *s = backed_store(t);
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  size_t *c = soft ? &s->soft_pins : &s->pins;
  if (*c) (*c)--;
  pthread_mutex_unlock(&s->mu);
}

ge_status ge_tensor_pin(const ge_tensor *t) { return pin(t, false); }
void ge_tensor_unpin(const ge_tensor *t) { unpin(t, false); }
ge_status ge_tensor_pin_soft(const ge_tensor *t) { return pin(t, true); }
void ge_tensor_unpin_soft(const ge_tensor *t) { unpin(t, true); }

static void evict(const ge_tensor *t, size_t soft_allowed) {
  shared_store *s = backed_store(t);
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  uintptr_t lo, hi;
  if (!s->pins && s->soft_pins <= soft_allowed && !s->evicted && inner_pages(s, &lo, &hi) &&
      madvise((void *)lo, (size_t)(hi - lo), MADV_DONTNEED) == 0)
    s->evicted = true;
  pthread_mutex_unlock(&s->mu);
}

void ge_tensor_evict(const ge_tensor *t) { evict(t, 0); }
void ge_tensor_evict_packed(const ge_tensor *t) { evict(t, 1); }

static ge_status graph_pin(const ge_graph *g, bool do_pin, bool soft) {
  for (size_t i = 0; g && i < g->n_values; i++) {
    const ge_tensor *c = g->values[i].constant;
    if (!c) continue;
    if (!do_pin) {
      unpin(c, soft);
      continue;
    }
    ge_status st = pin(c, soft);
    if (st != GE_OK) {
      for (size_t j = 0; j < i; j++)
        if (g->values[j].constant) unpin(g->values[j].constant, soft);
      return st;
    }
  }
  return GE_OK;
}

ge_status ge_graph_pin_constants(const ge_graph *g, bool soft) { return graph_pin(g, true, soft); }
void ge_graph_unpin_constants(const ge_graph *g, bool soft) { (void)graph_pin(g, false, soft); }

ge_status ge_tensor_share(const ge_tensor *t, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_share: out is NULL");
  *out = NULL;
  if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_share: NULL tensor");
  if (t->release != shared_release) return ge_tensor_clone(t, out);
  ge_tensor *c = malloc(sizeof *c);
  if (!c) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_tensor_share: out of memory");
  *c = *t;
  atomic_fetch_add_explicit(&((shared_store *)t->release_ctx)->refs, 1, memory_order_relaxed);
  *out = c;
  return GE_OK;
}

ge_status ge_tensor_create_shape(ge_dtype dt, const ge_shape *s, ge_tensor **out) {
  if (out) *out = NULL;
  if (!s) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_create_shape: NULL shape");
  if (!ge_shape_is_static(s)) {
    char buf[256];
    return ge_error(GE_ERR_SHAPE, "cannot create a tensor of non-static shape %s",
                    ge_shape_str(s, NULL, buf, sizeof buf));
  }
  return ge_tensor_create(dt, s->dims, (size_t)s->rank, out);
}

void ge_tensor_shape(const ge_tensor *t, ge_shape *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!t) return;
  out->rank = t->rank;
  for (int32_t i = 0; i < t->rank && i < GE_MAX_RANK; i++) out->dims[i] = t->dims[i];
}

double ge_tensor_get_f64(const ge_tensor *t, size_t i) {
  if (!t || !t->data || i >= t->numel) return 0.0;
  const void *p = t->data;
  switch (t->dtype) {
  case GE_F32: return ((const float *)p)[i];
  case GE_F16: return ge_f16_to_f32(((const uint16_t *)p)[i]);
  case GE_BF16: return ge_bf16_to_f32(((const uint16_t *)p)[i]);
  case GE_F64: return ((const double *)p)[i];
  case GE_I8: return ((const int8_t *)p)[i];
  case GE_I16: return ((const int16_t *)p)[i];
  case GE_I32: return ((const int32_t *)p)[i];
  case GE_I64: return (double)((const int64_t *)p)[i];
  case GE_U8: return ((const uint8_t *)p)[i];
  case GE_U16: return ((const uint16_t *)p)[i];
  case GE_U32: return ((const uint32_t *)p)[i];
  case GE_U64: return (double)((const uint64_t *)p)[i];
  case GE_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
  default:
    if (ge_dtype_is_lowp(t->dtype)) return ge_lowp_to_f32(t->dtype, ((const uint8_t *)p)[i]);
    return 0.0;
  }
}

/* float -> int64 without UB for NaN/out-of-range: saturates, NaN -> 0. */
static int64_t f64_to_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}

int64_t ge_tensor_get_i64(const ge_tensor *t, size_t i) {
  if (!t || !t->data || i >= t->numel) return 0;
  const void *p = t->data;
  switch (t->dtype) {
  case GE_F32: return f64_to_i64(((const float *)p)[i]);
  case GE_F16: return f64_to_i64(ge_f16_to_f32(((const uint16_t *)p)[i]));
  case GE_BF16: return f64_to_i64(ge_bf16_to_f32(((const uint16_t *)p)[i]));
  case GE_F64: return f64_to_i64(((const double *)p)[i]);
  case GE_I8: return ((const int8_t *)p)[i];
  case GE_I16: return ((const int16_t *)p)[i];
  case GE_I32: return ((const int32_t *)p)[i];
  case GE_I64: return ((const int64_t *)p)[i];
  case GE_U8: return ((const uint8_t *)p)[i];
  case GE_U16: return ((const uint16_t *)p)[i];
  case GE_U32: return ((const uint32_t *)p)[i];
  case GE_U64: {
    uint64_t u = ((const uint64_t *)p)[i];
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  case GE_BOOL: return ((const uint8_t *)p)[i] ? 1 : 0;
  default:
    if (ge_dtype_is_lowp_int(t->dtype)) return ge_lowp_int_value(t->dtype, ((const uint8_t *)p)[i]);
    if (ge_dtype_is_lowp(t->dtype)) return f64_to_i64(ge_lowp_to_f32(t->dtype, ((const uint8_t *)p)[i]));
    return 0;
  }
}
