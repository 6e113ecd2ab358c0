/* libFuzzer entry point: any byte string handed to ge_graph_load_buffer must either load (and
 * then save back to ONNX) or fail with a status; it must never crash, leak or read out of
 * bounds.  Built and run by scripts/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "frontend/onnx/onnx.h"
#include "ge/ge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ge_graph *g = NULL;
  /* base_dir NULL: external data is refused, so the fuzzer never reads files */
  if (ge_graph_load_buffer(data, size, NULL, &g) == GE_OK) {
    void *out = NULL;
    size_t n = 0;
    if (ge_onnx_export(g, &out, &n) == GE_OK) free(out);
    ge_graph_free(g);
  }
  return 0;
}
