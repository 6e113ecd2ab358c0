#!/usr/bin/env bash
# Generates the reference models (random seeded weights, no downloads) into OUTDIR.
#   scripts/gen_models.sh OUTDIR [extra gen_models.py args, e.g. --small]
# Uses Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14), not the venv.
# GEN_MODELS="resnet50 bert_base" restricts the run to those models; GEN_MODELS=resnet50_gratings
# trains the CNN on which bench/precision.py measures bf16 top-1 agreement (~7 minutes).
# A model is regenerated only when its files are missing or its stamp (a hash of this
# script, gen_models.py and the extra arguments) differs, so a second run is instant.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: gen_models.sh OUTDIR [gen_models.py args]}"
shift
PY="${GE_TORCH_PYTHON:-/usr/bin/python3}"
read -r -a MODELS <<< "${GEN_MODELS:-resnet50 mobilenetv2 googlenet bert_base gpt2}"

hash="$( { cat "$here/gen_models.sh" "$here/gen_models.py" "$here/gratings.py"; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1)"
mkdir -p "$out"
todo=()
for m in "${MODELS[@]}"; do
  stamp="$out/$m.stamp"
  if [ -f "$out/$m.onnx" ] && [ -d "$out/$m.inputs" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
    continue
  fi
  todo+=("$m")
done
if [ ${#todo[@]} -eq 0 ]; then
  echo "gen_models: all models in $out are up to date"
  exit 0
fi
if ! "$PY" -c "import torch, torchvision" 2>/dev/null; then
  echo "gen_models: $PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision)" >&2
  exit 1
fi
echo "gen_models: generating ${todo[*]} into $out"
for m in "${todo[@]}"; do
  rm -f "$out/$m.stamp"
  "$PY" "$here/gen_models.py" --out "$out" --models "$m" "$@"
  echo "$hash" > "$out/$m.stamp"
done
