/* A program outside the tree: builds a graph, runs it, prints the result. */
#include <ge/ge.h>
#include <stdio.h>

int main(void) {
  ge_graph *g = NULL;
  ge_session *s = NULL;
  ge_tensor *x = NULL, *y = NULL;
  int64_t d[] = {3};
  if (ge_initialize(NULL, 0) || ge_graph_create("c", &g) || ge_graph_add_input(g, "x", GE_F32, d, 1)) goto fail;
  const char *in[] = {"x", "x"}, *out[] = {"y"};
  if (ge_graph_add_node(g, "Add", "add", in, 2, out, 1, NULL, 0) || ge_graph_add_output(g, "y")) goto fail;
  if (ge_session_create(NULL, 0, &s) || ge_session_add_graph(s, 1, g) || ge_tensor_create(GE_F32, d, 1, &x)) goto fail;
  float *xp = ge_tensor_data(x);
  xp[0] = 1, xp[1] = 2, xp[2] = 3;
  if (ge_session_run_graph(s, 1, &x, 1, &y, 1)) goto fail;
  const float *yp = ge_tensor_data(y);
  printf("%g %g %g\n", yp[0], yp[1], yp[2]);
  ge_tensor_free(x), ge_tensor_free(y), ge_session_free(s), ge_graph_free(g), ge_finalize();
  return 0;
fail:
  fprintf(stderr, "consumer: %s\n", ge_last_error());
  return 1;
}
