# The two set-up commands are `make demo` and `make test`; both install what is missing.
SHELL := /bin/bash
BUILD ?= build
BUILD_ASAN ?= build-asan
JOBS ?= $(shell nproc)
PY := .venv/bin/python
MODELS ?= tests/models/out
export PYTHONPATH := $(CURDIR)/python
export GE_LIBRARY := $(CURDIR)/$(BUILD)/libge.so

.PHONY: all setup build build-asan test test-c test-asan test-tsan test-install test-conformance test-python conformance models demo bench fuzz install clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DGE_PYTHON_EXT=ON -DPython3_EXECUTABLE=$(CURDIR)/$(PY) > /dev/null

# progress lines are dropped; warnings and errors show, and a failed build fails the target
QUIET_BUILD = 2>&1 | { grep -v -E '^\[|^g?make\[' || true; }

build: setup $(BUILD)/Makefile
	@set -o pipefail; cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory $(QUIET_BUILD)

build-asan: setup
	@[ -f $(BUILD_ASAN)/Makefile ] || cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DGE_SANITIZE=ON > /dev/null
	@set -o pipefail; cmake --build $(BUILD_ASAN) -j $(JOBS) -- --no-print-directory $(QUIET_BUILD)

models: setup
	@scripts/gen_models.sh $(MODELS)

test-c: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

test-python: build models
	GE_MODELS=$(CURDIR)/$(MODELS) GE_BIN=$(CURDIR)/$(BUILD)/ge $(PY) -m pytest -q tests/python

conformance: build
	$(PY) tests/conformance/run.py --table

# the concurrency tests (4 threads on one session, async callbacks, drain) under TSan
BUILD_TSAN ?= build-tsan
EMPTY :=
SPACE := $(EMPTY) $(EMPTY)
TSAN_TESTS = test_session test_callbacks test_variables test_runs test_reclaim test_gemm test_amx
test-tsan: setup
	@[ -f $(BUILD_TSAN)/Makefile ] || cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DGE_TSAN=ON > /dev/null
	@set -o pipefail; cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TESTS) -- --no-print-directory $(QUIET_BUILD)
	cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -R '^($(subst $(SPACE),|,$(strip $(TSAN_TESTS))))$$'

test-install: build
	tests/install/run.sh $(BUILD)

test-conformance: build
	$(PY) tests/conformance/run.py --suites node,simple,pytorch-converted,pytorch-operator --ratchet tests/conformance/expected_failures.txt

# pytest runs last: its closing line is the run's summary
test: test-c test-asan test-tsan test-install test-conformance
	@$(MAKE) --no-print-directory test-python

demo: build
	@$(PY) scripts/demo.py --ge $(BUILD)/ge --out $(BUILD)/demo

bench: build models
	$(PY) bench/cores.py
	GE_MODELS=$(CURDIR)/$(MODELS) $(PY) bench/bench.py --models $(MODELS) --threads 1,2 --rounds 60 --iters 2
	$(PY) bench/precision.py --models $(MODELS) --only resnet50,bert_base --threads 1 --rounds 12 --iters 3 --no-agreement
	@GEN_MODELS=resnet50_gratings scripts/gen_models.sh $(MODELS)
	$(PY) bench/precision.py --models $(MODELS) --only resnet50,bert_base --threads 2 --rounds 12 --iters 3
	$(PY) bench/callbacks.py
	$(PY) bench/cores.py

fuzz: setup
	@scripts/fuzz.sh build-fuzz

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) build-fuzz
