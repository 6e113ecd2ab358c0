/* callbacks: a complete training-style program that watches its graph through callbacks.
 *
 *   example_callbacks [CHECKPOINT_PREFIX] [--async] [--logdir DIR]
 *
 * It initializes ge in training mode, opens a session, registers a "Summary" callback that
 * prints the loss and a "Save" callback that writes safetensors checkpoints (the built-in
 * writer), optionally a TensorBoard event-file writer for the Summary data (--logdir), adds a graph that fits y = w * x by gradient descent on variables, runs it, prints
 * the callback metrics, and finalizes (which drains any pending callbacks).  Uses only the
 * public API of <ge/ge.h>.
 *
 * The graph, for a fixed batch x (4 values) and targets t = 3 * x:
 *   y    = w * x                  w: a variable [1], starts at 0
 *   d    = y - t
 *   loss = ReduceMean(d * d)      -> Summary(tag "loss", type "scalar")
 *   grad = ReduceMean(d * x) * 2 * lr
 *   AssignSub(w, grad)            (variables change only in training mode)
 *   step = AssignAdd(step, 1)     -> Summary(tag "step", type "scalar")
 *   Save(w, step)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ge/ge.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    ge_status st_ = (call);                                                         \
    if (st_ != GE_OK) {                                                             \
      fprintf(stderr, "%s failed: %s: %s\n", #call, ge_status_str(st_), ge_last_error()); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

static ge_tensor *scalar1(float v) {
  int64_t one = 1;
  ge_tensor *t = NULL;
  CHECK(ge_tensor_create(GE_F32, &one, 1, &t));
  *(float *)ge_tensor_data(t) = v;
  return t;
}

/* "Summary": tag -> tensor.  Read-only, valid during the call. */
static uint32_t on_summary(uint32_t graph_id, const ge_tensor_map *m, void *user) {
  const ge_tensor *loss = ge_tensor_map_find(m, "loss"), *step = ge_tensor_map_find(m, "step");
  if (!loss || !step) return 1; /* a failure is logged and counted; the graph goes on */
  int *every = user;
  int s = (int)*(const float *)ge_tensor_data(step);
  if (s % *every == 0)
    printf("graph %u step %3d  loss %.6f\n", graph_id, s, *(const float *)ge_tensor_data(loss));
  return 0;
}

static ge_graph *build(void) {
  ge_graph *g = NULL;
  CHECK(ge_graph_create("fit", &g));
  int64_t four = 4;
  CHECK(ge_graph_add_input(g, "x", GE_F32, &four, 1));
  CHECK(ge_graph_add_input(g, "t", GE_F32, &four, 1));
  ge_tensor *w0 = scalar1(0), *s0 = scalar1(0), *one = scalar1(1), *k = scalar1(2 * 0.01f);
  CHECK(ge_graph_add_variable(g, "w", w0));
  CHECK(ge_graph_add_variable(g, "step", s0));
  CHECK(ge_graph_add_constant(g, "one", one));
  CHECK(ge_graph_add_constant(g, "two_lr", k));
  ge_tensor_free(w0);
  ge_tensor_free(s0);
  ge_tensor_free(one);
  ge_tensor_free(k);
#define NODE(op, name, ins, outs, attrs, na) \
  CHECK(ge_graph_add_node(g, op, name, ins, sizeof ins / sizeof *ins, outs, 1, attrs, na))
#define NODE0(op, name, ins, attrs, na) \
  CHECK(ge_graph_add_node(g, op, name, ins, sizeof ins / sizeof *ins, NULL, 0, attrs, na))
  const char *i_y[] = {"w", "x"}, *o_y[] = {"y"};
  NODE("Mul", "mul", i_y, o_y, NULL, 0);
  const char *i_d[] = {"y", "t"}, *o_d[] = {"d"};
  NODE("Sub", "sub", i_d, o_d, NULL, 0);
  const char *i_sq[] = {"d", "d"}, *o_sq[] = {"sq"};
  NODE("Mul", "sq", i_sq, o_sq, NULL, 0);
  ge_attr keep[] = {GE_ATTR_INT("keepdims", 1)};
  const char *i_l[] = {"sq"}, *o_l[] = {"loss"};
  NODE("ReduceMean", "mean_loss", i_l, o_l, keep, 1);
  const char *i_dx[] = {"d", "x"}, *o_dx[] = {"dx"};
  NODE("Mul", "dx", i_dx, o_dx, NULL, 0);
  const char *i_g[] = {"dx"}, *o_g[] = {"g"};
  NODE("ReduceMean", "mean_grad", i_g, o_g, keep, 1);
  const char *i_gs[] = {"g", "two_lr"}, *o_gs[] = {"delta"};
  NODE("Mul", "scale", i_gs, o_gs, NULL, 0);
  const char *i_u[] = {"w", "delta"}, *o_u[] = {"w_new"};
  NODE("ai.ge::AssignSub", "update", i_u, o_u, NULL, 0);
  const char *i_s[] = {"step", "one"}, *o_s[] = {"step_new"};
  NODE("ai.ge::AssignAdd", "count", i_s, o_s, NULL, 0);
  ge_attr sl[] = {GE_ATTR_STRING("tag", "loss"), GE_ATTR_STRING("type", "scalar")};
  const char *i_sl[] = {"loss"};
  NODE0("ai.ge::Summary", "summary_loss", i_sl, sl, 2);
  ge_attr ss[] = {GE_ATTR_STRING("tag", "step"), GE_ATTR_STRING("type", "scalar")};
  const char *i_ss[] = {"step_new"};
  NODE0("ai.ge::Summary", "summary_step", i_ss, ss, 2);
  const char *i_sv[] = {"w", "step"};
  NODE0("ai.ge::Save", "save", i_sv, NULL, 0);
#undef NODE
#undef NODE0
  CHECK(ge_graph_add_output(g, "loss"));
  return g;
}

int main(int argc, char **argv) {
  const char *prefix = "/tmp/ge_example_ckpt";
  const char *logdir = NULL;
  int async = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--async")) async = 1;
    else if (!strcmp(argv[i], "--logdir") && i + 1 < argc) logdir = argv[++i];
    else prefix = argv[i];
  }
  ge_option opts[] = {{"ge.graphRunMode", "1"}, {"ge.callbackMode", async ? "async" : "sync"}};
  CHECK(ge_initialize(NULL, 0));
  ge_session *s = NULL;
  CHECK(ge_session_create(opts, 2, &s));

  int every = 5;
  ge_checkpoint_writer *ckpt = NULL;
  CHECK(ge_checkpoint_writer_create(prefix, &ckpt));
  CHECK(ge_session_register_callback(s, "Summary", on_summary, &every));
  CHECK(ge_session_register_callback(s, "Save", ge_checkpoint_writer_callback, ckpt));
  ge_summary_writer *tb = NULL; /* a second Summary callback, after the printer */
  if (logdir) {
    CHECK(ge_summary_writer_create(logdir, &tb));
    CHECK(ge_session_add_callback(s, "Summary", ge_summary_writer_callback, tb, 1));
    printf("TensorBoard events: %s\n", ge_summary_writer_path(tb));
  }

  ge_graph *g = build();
  CHECK(ge_session_add_graph(s, 1, g));
  ge_graph_free(g);

  int64_t four = 4;
  ge_tensor *x = NULL, *t = NULL;
  CHECK(ge_tensor_create(GE_F32, &four, 1, &x));
  CHECK(ge_tensor_create(GE_F32, &four, 1, &t));
  for (int i = 0; i < 4; i++) {
    ((float *)ge_tensor_data(x))[i] = (float)(i + 1);
    ((float *)ge_tensor_data(t))[i] = 3.0f * (float)(i + 1);
  }
  ge_tensor *inputs[] = {x, t};
  for (int it = 0; it < 30; it++) {
    ge_tensor *loss = NULL;
    CHECK(ge_session_run_graph(s, 1, inputs, 2, &loss, 1));
    ge_tensor_free(loss);
  }

  const char *names[] = {"w"};
  ge_tensor *w = NULL;
  CHECK(ge_session_get_variables(s, names, 1, &w));
  printf("w = %.4f (target 3)\n", *(float *)ge_tensor_data(w));
  ge_tensor_free(w);

  CHECK(ge_finalize()); /* drains pending callbacks (async mode) */
  const char *key = NULL;
  for (size_t i = 0; ge_session_callback_key(s, i, &key) == GE_OK; i++) {
    ge_callback_stats st;
    CHECK(ge_session_callback_stats(s, key, &st));
    printf("callback %-8s calls %llu failures %llu mean %.3f ms max %.3f ms bytes %llu\n", key,
           (unsigned long long)st.calls, (unsigned long long)st.failures, st.mean_ms, st.max_ms,
           (unsigned long long)st.bytes);
  }
  printf("checkpoints written: %llu (latest: %s-latest.safetensors)\n",
         (unsigned long long)ge_checkpoint_writer_count(ckpt), prefix);
  ge_session_free(s);
  ge_checkpoint_writer_free(ckpt);
  ge_summary_writer_free(tb);
  ge_tensor_free(x);
  ge_tensor_free(t);
  return 0;
}
