"""bench/cores.py: every CPU this process may use is measured, in float32 and bf16, and the
spread is printed; bad arguments are refused with a message."""
import os
import re
import subprocess
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SCRIPT = os.path.join(_REPO, "bench", "cores.py")


def _run(*args):
    return subprocess.run([sys.executable, _SCRIPT] + list(args), capture_output=True, text=True,
                          timeout=600, env=dict(os.environ))


def test_cores_measures_every_cpu(ge):
    r = _run("--seconds", "0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    line = r.stdout.strip().splitlines()[-1]
    cpus = sorted(os.sched_getaffinity(0))
    got = {int(c): (float(f), float(b)) for c, f, b in re.findall(r"cpu(\d+) fp32 (\d+) bf16 (\d+)", line)}
    assert sorted(got) == cpus, line
    assert all(f > 0 and b > 0 for f, b in got.values()), line
    if len(cpus) > 1:
        spread = dict(re.findall(r"(fp32|bf16) slowest/fastest ([\d.]+)", line))
        assert set(spread) == {"fp32", "bf16"}, line
        assert all(0 < float(v) <= 1 for v in spread.values()), line


def test_cores_refuses_bad_seconds():
    r = _run("--seconds", "0")
    assert r.returncode != 0
    assert "--seconds must be positive" in r.stderr
