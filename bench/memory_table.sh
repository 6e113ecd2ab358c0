#!/bin/bash
# Node counts before/after the passes and the memory plan of the five reference models, as a
# markdown table: `ge inspect MODEL --json --passes` with each model's saved input shapes.
#   bench/memory_table.sh [BUILD_DIR (default build)] [MODELS_DIR (default tests/models/out)]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
M=${2:-tests/models/out}
PY=.venv/bin/python
echo "| model | nodes before -> after | arena | lower bound | arena / bound | without reuse |"
echo "|---|---|---|---|---|---|"
for m in resnet50 mobilenetv2 googlenet bert_base gpt2; do
  args=()
  for f in "$M/$m.inputs"/*.npy; do
    n=$(basename "$f" .npy)
    s=$($PY -c "import numpy as np, sys; print(','.join(map(str, np.load(sys.argv[1], mmap_mode='r').shape)))" "$f")
    args+=(--input-shape "$n:$s")
  done
  "$B/ge" inspect "$M/$m.onnx" --json --passes "${args[@]}" | $PY -c "
import json, sys
r = json.load(sys.stdin); m = r['memory']; p = r['passes']; MiB = 1 << 20
print('| %s | %d -> %d | %.2f MiB | %.2f MiB | %.3f | %.2f MiB |' % (sys.argv[1], p['nodes_before'],
      p['nodes_after'], m['arena_bytes'] / MiB, m['lower_bound_bytes'] / MiB,
      m['arena_bytes'] / m['lower_bound_bytes'], m['no_reuse_bytes'] / MiB))" "$m"
done
