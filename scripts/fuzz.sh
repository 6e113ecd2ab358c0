#!/usr/bin/env bash
# Builds the ONNX importer fuzzer (tests/fuzz/fuzz_onnx.c) with clang and
# -fsanitize=fuzzer,address,undefined into the build folder $1 (default build-fuzz), writes a
# seed corpus of small models there (tests/fuzz/gen_corpus.py, the venv's onnx package) and
# runs it for ${FUZZ_SECONDS:-600} seconds.  Prints libFuzzer's final stats; exits non-zero
# when the fuzzer finds a crash, a leak, undefined behaviour or a timeout (the input is kept
# as $1/crash-*, $1/leak-*, ...).  FUZZ_JOBS compiles in parallel (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${1:-build-fuzz}
mkdir -p "$B"
B=$(cd "$B" && pwd)
SECONDS_TO_RUN=${FUZZ_SECONDS:-600}
JOBS=${FUZZ_JOBS:-2}
CC=${CC_FUZZ:-clang}
PY=${PY:-$ROOT/.venv/bin/python}

# 1. the library, instrumented and sanitized, and the fuzz target: the same CMake build as
#    everything else (so every source, generated file and dependency is in), with clang
if [ ! -f "$B/CMakeCache.txt" ]; then
  CC=$CC cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGE_FUZZ=ON \
    -DGE_BUILD_TESTS=OFF > /dev/null
fi
cmake --build "$B" -j "$JOBS" --target fuzz_onnx -- --no-print-directory 2>&1 | { grep -v -E '^\[|^g?make\[' || true; }
[ -x "$B/fuzz_onnx" ] || { echo "fuzz.sh: build failed" >&2; exit 1; }
echo "fuzz.sh: built $B/fuzz_onnx"

# 2. seed corpus
mkdir -p "$B/corpus" "$B/seeds"
"$PY" tests/fuzz/gen_corpus.py "$B/seeds"

# 3. run
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
LOG="$B/fuzz.log"
set +e
"$B/fuzz_onnx" -max_total_time="$SECONDS_TO_RUN" -print_final_stats=1 -max_len=8192 \
  -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=4096 -artifact_prefix="$B/" \
  "$B/corpus" "$B/seeds" >"$LOG" 2>&1
rc=$?
set -e
grep -E "^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs" "$LOG" | tail -n 2 || true
grep -E "^stat::" "$LOG" || true
if [ $rc -ne 0 ]; then
  echo "fuzz.sh: the fuzzer FAILED (exit $rc); see $LOG" >&2
  grep -E "ERROR|SUMMARY|Test unit written" "$LOG" | head -n 20 >&2 || true
  exit 1
fi
echo "fuzz.sh: no crash in ${SECONDS_TO_RUN}s"
