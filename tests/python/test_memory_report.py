"""The memory report of `ge inspect --json` on the five reference architectures.

For each model (static input shapes: those of its saved inputs), after the optimisation passes
(`--passes`):
  * memory.arena_bytes, memory.no_reuse_bytes and memory.lower_bound_bytes are present, and
    lower bound <= arena <= no-reuse sum;
  * goal of issue 5: the arena is at most 1.05 x the lower bound (the largest total of live
    bytes at any step of the schedule);
  * with ge.exec.disableReuseMemory=1 the arena is exactly the no-reuse sum.

Environment: GE_MODELS (default tests/models/out), GE_BIN (default build/ge).
"""
import json
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.environ.get("GE_MODELS", os.path.join(ROOT, "tests", "models", "out"))
GE_BIN = os.environ.get("GE_BIN", os.path.join(ROOT, "build", "ge"))
MODELS = ["resnet50", "mobilenetv2", "googlenet", "bert_base", "gpt2"]
ARENA_GOAL = 1.05

pytestmark = pytest.mark.skipif(
    not os.path.isdir(MODELS_DIR),
    reason="model folder %s is missing: run `make models` (or set GE_MODELS)" % MODELS_DIR)


def shape_args(name):
    """--input-shape NAME:D,D,.. for every input, from the saved inputs of the model."""
    d = os.path.join(MODELS_DIR, name + ".inputs")
    assert os.path.isdir(d), "%s is missing: run `make models`" % d
    args = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".npy"):
            a = np.load(os.path.join(d, f), mmap_mode="r")
            args += ["--input-shape", "%s:%s" % (f[:-4], ",".join(str(x) for x in a.shape))]
    return args


def inspect(name, *extra):
    path = os.path.join(MODELS_DIR, name + ".onnx")
    assert os.path.isfile(path), "%s is missing: run `make models`" % path
    assert os.path.isfile(GE_BIN), "%s is missing: build it" % GE_BIN
    cmd = [GE_BIN, "inspect", path, "--json", "--passes"] + shape_args(name) + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, "%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr)
    rep = json.loads(r.stdout)
    assert "memory" in rep, "no memory plan in the report: %s" % rep.get("error")
    return rep


@pytest.mark.parametrize("name", MODELS)
def test_arena_near_lower_bound(name):
    rep = inspect(name)
    m = rep["memory"]
    assert not rep["compiled"]["dynamic"]
    assert rep["passes"]["nodes_after"] <= rep["passes"]["nodes_before"]
    arena, lb, nr = m["arena_bytes"], m["lower_bound_bytes"], m["no_reuse_bytes"]
    assert 0 < lb <= arena <= nr, m
    assert arena <= ARENA_GOAL * lb, \
        "%s: arena %d bytes is %.3fx the lower bound %d (goal <= %.2fx)" % (
            name, arena, arena / lb, lb, ARENA_GOAL)


@pytest.mark.parametrize("name", MODELS)
def test_no_reuse_arena_is_the_sum(name):
    rep = inspect(name, "--option", "ge.exec.disableReuseMemory=1")
    m = rep["memory"]
    assert m["arena_bytes"] == m["no_reuse_bytes"], m
    assert m["lower_bound_bytes"] <= m["arena_bytes"]
