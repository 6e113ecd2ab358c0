"""Threads (issue 6): ge.intraOpThreads bounds the cores a run keeps busy, and no thread keeps
spinning once a run has returned.  Measured as process CPU time (user + system), which counts
every thread of the process, against wall time: behaviour, not speed."""
import os
import resource
import subprocess
import time

import numpy as np
import pytest
from onnx import numpy_helper


def _cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@pytest.fixture
def conv_model(make_model):
    """Two 3x3 convolutions (oneDNN, OpenMP) with a ReLU and a residual Add (fast kernels)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.05, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.05, "w2")
    from onnx import helper
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Sigmoid", ["s"], ["y"])]
    return make_model(nodes, [("x", np.float32, [1, 32, 96, 96])], [("y", np.float32, None)],
                      initializers=[w1, w2])


def _busy_cores(sess, feeds, seconds=1.0):
    sess.run(None, feeds)  # compile and warm up
    c0, t0 = _cpu_s(), time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds or n < 5:
        sess.run(None, feeds)
        n += 1
    return (_cpu_s() - c0) / (time.perf_counter() - t0)


def test_one_thread_keeps_one_core_busy(ge, conv_model):
    sess = ge.InferenceSession(conv_model, threads=1)
    x = np.random.default_rng(1).standard_normal((1, 32, 96, 96)).astype(np.float32)
    busy = _busy_cores(sess, {"x": x})
    assert busy <= 1.15, "1 intra-op thread kept %.2f cores busy" % busy


def test_two_threads_keep_at_most_two_cores_busy(ge, conv_model):
    sess = ge.InferenceSession(conv_model, threads=2)
    x = np.random.default_rng(2).standard_normal((1, 32, 96, 96)).astype(np.float32)
    busy = _busy_cores(sess, {"x": x})
    assert busy <= 2.15, "2 intra-op threads kept %.2f cores busy" % busy


@pytest.mark.skipif(os.environ.get("OMP_WAIT_POLICY", "").lower() == "active",
                    reason="OMP_WAIT_POLICY=active asks the threads to spin")
def test_no_spinning_after_a_run(ge, conv_model):
    sess = ge.InferenceSession(conv_model, threads=2)
    x = np.random.default_rng(3).standard_normal((1, 32, 96, 96)).astype(np.float32)
    for _ in range(5):
        sess.run(None, {"x": x})
    c0 = _cpu_s()
    time.sleep(0.5)
    idle = _cpu_s() - c0
    # GOMP_SPINCOUNT=20000 (set by the package) is well under 1 ms of spinning; allow 20 ms
    assert idle < 0.02, "threads used %.3f s of CPU in the 0.5 s after a run" % idle


@pytest.fixture
def dw_model(make_model):
    """A 1x1 convolution, ReLU and a 3x3 depthwise one: oneDNN's depthwise primitive opens
    the thread team it was created for unless the run caps it (without the cap, one-thread
    runs of it kept 1.96 cores busy)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((144, 32, 1, 1)).astype(np.float32) * 0.05, "w1")
    wd = numpy_helper.from_array(rng.standard_normal((144, 1, 3, 3)).astype(np.float32) * 0.05, "wd")
    from onnx import helper
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["y"], pads=[1, 1, 1, 1], group=144)]
    return make_model(nodes, [("x", np.float32, [1, 32, 56, 56])], [("y", np.float32, None)],
                      initializers=[w1, wd])


def test_one_thread_runs_of_a_two_thread_plan(ge, dw_model):
    """ge.exec.forceOneThread (what the adaptive thread count does while a core is taken):
    a plan compiled for 2 threads, oneDNN's primitives included, keeps one core busy, and
    computes what it computes on 2."""
    x = np.random.default_rng(3).standard_normal((1, 32, 56, 56)).astype(np.float32)
    two = ge.InferenceSession(dw_model, threads=2, options={"ge.exec.adaptiveThreads": "0"})
    one = ge.InferenceSession(dw_model, threads=2, options={"ge.exec.forceOneThread": "1"})
    np.testing.assert_allclose(one.run(None, {"x": x})[0], two.run(None, {"x": x})[0],
                               rtol=0, atol=1e-5)
    busy = _busy_cores(one, {"x": x})
    assert busy <= 1.15, "one-thread runs of a 2-thread plan kept %.2f cores busy" % busy
    st = one.run_stats()
    assert st["threads"] == 2 and st["runs"] >= 7 and st["runs_one_thread"] == st["runs"]
    st = two.run_stats()
    assert st == {"runs": 1, "runs_one_thread": 0, "switches": 0, "probes": 0, "threads": 2,
                  "adaptive": False}


def test_adaptive_threads_default(ge, conv_model):
    """On for inference with 2 threads (on a quiet machine its runs keep both), off with one."""
    x = np.zeros((1, 32, 96, 96), np.float32)
    sess = ge.InferenceSession(conv_model, threads=2)
    for _ in range(3):
        sess.run(None, {"x": x})
    st = sess.run_stats()
    assert st["adaptive"] and st["threads"] == 2 and st["runs"] == 3
    assert st["runs_one_thread"] <= st["runs"]
    assert not ge.InferenceSession(conv_model, threads=1).run_stats()["adaptive"]


GE_BIN = os.environ.get("GE_BIN", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "build", "ge"))


def test_cli_threads_keep_their_cpus_with_omp_proc_bind(conv_model, tmp_path):
    """The `ge` command runs itself again with a short spin bound; with OMP_PROC_BIND set, the
    OpenMP runtime of the first image had bound the thread to one CPU, which the second image
    inherited, so every thread of a 2-thread run shared that CPU.  Now the threads of a run are
    bound to distinct CPUs (OMP_DISPLAY_AFFINITY prints each thread's)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU")
    assert os.path.isfile(GE_BIN), "%s is missing: build it or set GE_BIN" % GE_BIN
    path = tmp_path / "conv.onnx"
    path.write_bytes(conv_model)
    env = dict(os.environ, OMP_PROC_BIND="true", OMP_DISPLAY_AFFINITY="true")
    env.pop("GOMP_SPINCOUNT", None)  # the package set it; without it the command runs itself again
    env.pop("OMP_WAIT_POLICY", None)
    r = subprocess.run([GE_BIN, "bench", str(path), "--threads", "2", "--iters", "2"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    cpus = {ln.split("affinity", 1)[1].strip() for ln in (r.stdout + r.stderr).splitlines()
            if ln.startswith("level 1 thread") and "affinity" in ln}
    assert len(cpus) >= 2, "the run's threads were all bound to %s" % cpus
