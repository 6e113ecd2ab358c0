/* run_model: load a model, run it once on inputs read from .npy files, write outputs as .npy.
 *
 *   example_run_model MODEL OUT_DIR [NAME=FILE.npy]... [--threads N]
 *
 * Inputs are matched to the model's inputs by name; every model input must be given.  Each
 * output is written to OUT_DIR/<output_name>.npy.  Uses only the public API of <ge/ge.h>.
 *
 * The .npy reader/writer handles version 1.x/2.x/3.x files of little-endian float32, float64,
 * int32, int64 and bool arrays in C order -- enough for an example; use numpy for anything else.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ge/ge.h>

#define MAX_INPUTS 64

/* ------------------------------------------------------------------ .npy */

static const struct {
  const char *descr;
  ge_dtype dt;
} npy_types[] = {
    {"<f4", GE_F32}, {"<f8", GE_F64}, {"<i4", GE_I32}, {"<i8", GE_I64}, {"|b1", GE_BOOL},
};

static int npy_fail(const char *path, const char *why) {
  fprintf(stderr, "run_model: %s: %s\n", path, why);
  return -1;
}

/* Parses the header dict; fills dt, dims, rank. */
static int npy_parse_header(const char *path, const char *h, ge_dtype *dt, int64_t *dims,
                            size_t *rank) {
  const char *d = strstr(h, "'descr'");
  const char *f = strstr(h, "'fortran_order'");
  const char *s = strstr(h, "'shape'");
  if (!d || !f || !s) return npy_fail(path, "malformed header");
  d = strchr(d + 7, '\'');
  if (!d) return npy_fail(path, "malformed descr");
  size_t k;
  for (k = 0; k < sizeof npy_types / sizeof npy_types[0]; k++) {
    size_t n = strlen(npy_types[k].descr);
    if (strncmp(d + 1, npy_types[k].descr, n) == 0 && d[1 + n] == '\'') break;
  }
  if (k == sizeof npy_types / sizeof npy_types[0])
    return npy_fail(path, "unsupported dtype (need <f4, <f8, <i4, <i8 or |b1)");
  *dt = npy_types[k].dt;
  f = strchr(f + 15, ':');
  if (!f) return npy_fail(path, "malformed fortran_order");
  f++;
  while (*f == ' ') f++;
  if (strncmp(f, "False", 5) != 0) return npy_fail(path, "Fortran-order arrays are not supported");
  s = strchr(s + 7, '(');
  if (!s) return npy_fail(path, "malformed shape");
  s++;
  *rank = 0;
  for (;;) {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ')') break;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0) return npy_fail(path, "malformed shape");
    if (*rank == GE_MAX_RANK) return npy_fail(path, "rank too large");
    dims[(*rank)++] = (int64_t)v;
    s = end;
  }
  return 0;
}

/* Reads a .npy file into a new tensor. */
static int npy_read(const char *path, ge_tensor **out) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "run_model: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  int rc = -1;
  char *header = NULL;
  unsigned char pre[12];
  if (fread(pre, 1, 8, fp) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    npy_fail(path, "not a .npy file");
    goto done;
  }
  size_t hlen;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, fp) != 2) goto trunc;
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 8, 1, 4, fp) != 4) goto trunc;
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    if (hlen > (1u << 20)) {
      npy_fail(path, "header too large");
      goto done;
    }
  } else {
    npy_fail(path, "unsupported .npy version");
    goto done;
  }
  header = malloc(hlen + 1);
  if (!header) {
    npy_fail(path, "out of memory");
    goto done;
  }
  if (fread(header, 1, hlen, fp) != hlen) goto trunc;
  header[hlen] = '\0';
  ge_dtype dt;
  int64_t dims[GE_MAX_RANK];
  size_t rank;
  if (npy_parse_header(path, header, &dt, dims, &rank) != 0) goto done;
  ge_tensor *t;
  ge_status st = ge_tensor_create(dt, dims, rank, &t);
  if (st != GE_OK) {
    fprintf(stderr, "run_model: %s: %s\n", path, ge_last_error());
    goto done;
  }
  size_t nbytes = ge_tensor_nbytes(t);
  if (nbytes && fread(ge_tensor_data(t), 1, nbytes, fp) != nbytes) {
    ge_tensor_free(t);
    goto trunc;
  }
  *out = t;
  rc = 0;
  goto done;
trunc:
  npy_fail(path, "truncated file");
done:
  free(header);
  fclose(fp);
  return rc;
}

static const char *npy_descr(ge_dtype dt) {
  for (size_t k = 0; k < sizeof npy_types / sizeof npy_types[0]; k++)
    if (npy_types[k].dt == dt) return npy_types[k].descr;
  return NULL;
}

/* Writes a tensor as a version 1.0 .npy file. */
static int npy_write(const char *path, const ge_tensor *t) {
  const char *descr = npy_descr(ge_tensor_dtype(t));
  if (!descr) {
    fprintf(stderr, "run_model: %s: cannot write dtype %s as .npy\n", path,
            ge_dtype_name(ge_tensor_dtype(t)));
    return -1;
  }
  char shape[GE_MAX_RANK * 24 + 8];
  size_t pos = 0;
  const int64_t *dims = ge_tensor_dims(t);
  size_t rank = ge_tensor_rank(t);
  shape[pos++] = '(';
  for (size_t i = 0; i < rank; i++)
    pos += (size_t)snprintf(shape + pos, sizeof shape - pos, "%lld,%s", (long long)dims[i],
                            i + 1 < rank ? " " : "");
  if (rank > 1) pos--; /* "(2, 3)" rather than "(2, 3,)"; keep "(5,)" */
  shape[pos++] = ')';
  shape[pos] = '\0';
  char header[512];
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   descr, shape);
  if (n < 0 || (size_t)n + 74 > sizeof header) return npy_fail(path, "header too large");
  size_t len = (size_t)n;
  size_t total = (10 + len + 1 + 63) / 64 * 64; /* magic+version+hlen, dict, '\n' */
  while (10 + len + 1 < total) header[len++] = ' ';
  header[len++] = '\n';
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff),
                           (unsigned char)(len >> 8)};
  FILE *fp = fopen(path, "wb");
  if (!fp) {
    fprintf(stderr, "run_model: cannot create %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t nbytes = ge_tensor_nbytes(t);
  int ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(header, 1, len, fp) == len &&
           (nbytes == 0 || fwrite(ge_tensor_data(t), 1, nbytes, fp) == nbytes);
  if (fclose(fp) != 0) ok = 0;
  if (!ok) {
    fprintf(stderr, "run_model: error writing %s\n", path);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ main */

/* mkdir -p */
static int make_dirs(const char *dir) {
  size_t len = strlen(dir);
  char *p = malloc(len + 1);
  if (!p) return -1;
  memcpy(p, dir, len + 1);
  int rc = 0;
  for (size_t i = 1; i <= len && rc == 0; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char c = p[i];
    p[i] = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
    p[i] = c;
  }
  free(p);
  return rc;
}

static int check(ge_status st, const char *what) {
  if (st == GE_OK) return 0;
  fprintf(stderr, "run_model: %s failed: %s: %s\n", what, ge_status_str(st), ge_last_error());
  return -1;
}

static void usage(void) {
  fprintf(stderr, "usage: example_run_model MODEL OUT_DIR [NAME=FILE.npy]... [--threads N]\n");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    usage();
    return 2;
  }
  const char *model = argv[1], *out_dir = argv[2];
  const char *threads = NULL;
  const char *names[MAX_INPUTS];
  const char *files[MAX_INPUTS];
  size_t n_given = 0;
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = argv[++i];
      continue;
    }
    char *eq = strchr(argv[i], '=');
    if (!eq || eq == argv[i] || n_given == MAX_INPUTS) {
      usage();
      return 2;
    }
    *eq = '\0';
    names[n_given] = argv[i];
    files[n_given++] = eq + 1;
  }

  int rc = 1;
  ge_graph *g = NULL;
  ge_session *s = NULL;
  ge_tensor *inputs[MAX_INPUTS] = {0};
  ge_tensor **outputs = NULL;
  size_t n_in = 0, n_out = 0;

  if (check(ge_initialize(NULL, 0), "ge_initialize")) return 1;
  if (check(ge_graph_load(model, NULL, 0, &g), "loading the model")) goto done;
  n_in = ge_graph_num_inputs(g);
  n_out = ge_graph_num_outputs(g);
  if (n_in > MAX_INPUTS) {
    fprintf(stderr, "run_model: the model has %zu inputs; at most %d supported\n", n_in,
            MAX_INPUTS);
    goto done;
  }
  for (size_t i = 0; i < n_in; i++) {
    const char *name;
    ge_dtype dt;
    const int64_t *dims;
    size_t rank, j;
    if (check(ge_graph_input_info(g, i, &name, &dt, &dims, &rank), "ge_graph_input_info"))
      goto done;
    for (j = 0; j < n_given && strcmp(names[j], name) != 0; j++) {
    }
    if (j == n_given) {
      fprintf(stderr, "run_model: no file given for input '%s' (%s); pass %s=FILE.npy\n", name,
              ge_dtype_name(dt), name);
      goto done;
    }
    if (npy_read(files[j], &inputs[i]) != 0) goto done;
    if (ge_tensor_dtype(inputs[i]) != dt) {
      fprintf(stderr, "run_model: input '%s' is %s but %s holds %s\n", name, ge_dtype_name(dt),
              files[j], ge_dtype_name(ge_tensor_dtype(inputs[i])));
      goto done;
    }
  }
  for (size_t j = 0; j < n_given; j++) {
    size_t i;
    for (i = 0; i < n_in; i++) {
      const char *name;
      ge_dtype dt;
      const int64_t *dims;
      size_t rank;
      if (ge_graph_input_info(g, i, &name, &dt, &dims, &rank) == GE_OK &&
          strcmp(name, names[j]) == 0)
        break;
    }
    if (i == n_in) {
      fprintf(stderr, "run_model: the model has no input named '%s'\n", names[j]);
      goto done;
    }
  }

  ge_option opts[1];
  size_t n_opts = 0;
  if (threads) opts[n_opts++] = (ge_option){"ge.intraOpThreads", threads};
  if (check(ge_session_create(opts, n_opts, &s), "ge_session_create")) goto done;
  if (check(ge_session_add_graph(s, 1, g), "ge_session_add_graph")) goto done;
  if (check(ge_session_build_graph(s, 1), "ge_session_build_graph")) goto done;
  outputs = calloc(n_out ? n_out : 1, sizeof *outputs);
  if (!outputs) {
    fprintf(stderr, "run_model: out of memory\n");
    goto done;
  }
  if (check(ge_session_run_graph(s, 1, inputs, n_in, outputs, n_out), "ge_session_run_graph"))
    goto done;

  if (make_dirs(out_dir) != 0) {
    fprintf(stderr, "run_model: cannot create %s: %s\n", out_dir, strerror(errno));
    goto done;
  }
  for (size_t i = 0; i < n_out; i++) {
    const char *name;
    ge_dtype dt;
    const int64_t *dims;
    size_t rank;
    if (check(ge_graph_output_info(g, i, &name, &dt, &dims, &rank), "ge_graph_output_info"))
      goto done;
    if (strchr(name, '/')) {
      fprintf(stderr, "run_model: output name '%s' is not a file name\n", name);
      goto done;
    }
    size_t len = strlen(out_dir) + strlen(name) + 6;
    char *path = malloc(len);
    if (!path) {
      fprintf(stderr, "run_model: out of memory\n");
      goto done;
    }
    snprintf(path, len, "%s/%s.npy", out_dir, name);
    int w = npy_write(path, outputs[i]);
    if (w == 0) printf("%s\n", path);
    free(path);
    if (w != 0) goto done;
  }
  rc = 0;

done:
  if (outputs)
    for (size_t i = 0; i < n_out; i++)
      if (outputs[i]) ge_tensor_free(outputs[i]);
  free(outputs);
  for (size_t i = 0; i < n_in; i++)
    if (inputs[i]) ge_tensor_free(inputs[i]);
  if (s) ge_session_free(s);
  if (g) ge_graph_free(g);
  ge_finalize();
  return rc;
}
