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

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=c11 -O1 -g -D_GNU_SOURCE $SAN -I$ROOT/include -I$ROOT/src -I$B/proto"

# 1. the protobuf-c code for our schema
mkdir -p "$B/proto" "$B/obj"
if [ ! -f "$B/proto/ge_onnx.pb-c.c" ] || [ src/frontend/onnx/ge_onnx.proto -nt "$B/proto/ge_onnx.pb-c.c" ]; then
  protoc-c --c_out="$B/proto" --proto_path=src/frontend/onnx src/frontend/onnx/ge_onnx.proto
fi

# 2. every library source (coverage-instrumented, sanitized), then the fuzz target
export CC CFLAGS B
compile() {
  local src=$1 obj
  obj="$B/obj/$(echo "$src" | tr '/' '_').o"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$ROOT/src/ir/ir.h" -nt "$obj" ]; then
    $CC $CFLAGS -fsanitize=fuzzer-no-link -w -c "$src" -o "$obj"
  fi
  echo "$obj"
}
export -f compile
SOURCES=$( (find src -name '*.c'; echo "$B/proto/ge_onnx.pb-c.c") | sort)
OBJS=$(printf '%s\n' $SOURCES | xargs -P "$JOBS" -I{} bash -c 'compile {}')
rm -f "$B/libge_fuzz.a"
ar rcs "$B/libge_fuzz.a" $OBJS
$CC $CFLAGS -fsanitize=fuzzer tests/fuzz/fuzz_onnx.c "$B/libge_fuzz.a" \
  $(pkg-config --libs libprotobuf-c) -lpthread -lm -o "$B/fuzz_onnx"
echo "fuzz.sh: built $B/fuzz_onnx"

# 3. seed corpus
mkdir -p "$B/corpus" "$B/seeds"
"$PY" tests/fuzz/gen_corpus.py "$B/seeds"

# 4. run
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
