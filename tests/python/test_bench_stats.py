"""bench/bench.py's paired summary: the 95% confidence interval of the median of the per-round
ratios (order statistics) covers the true median at least 95% of the time, and is absent
when there are too few rounds for it."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "bench"))
import bench  # noqa: E402


def test_median_ci_order_statistics():
    assert bench.median_ci(list(range(30))) == (9, 20)
    assert bench.median_ci(list(range(60))) == (21, 38)
    assert bench.median_ci([5, 1, 4, 2, 3, 0]) == (0, 5)  # n = 6: the extremes cover 96.9%
    assert bench.median_ci([1, 2, 3, 4, 5]) == (None, None)  # n = 5: at most 93.8%


def test_median_ci_coverage():
    rng = random.Random(7)
    for n in (30, 60):
        hits = 0
        for _ in range(2000):
            xs = [rng.lognormvariate(0.0, 0.15) for _ in range(n)]  # true median 1.0
            lo, hi = bench.median_ci(xs)
            hits += lo <= 1.0 <= hi
        assert hits / 2000 >= 0.94, (n, hits)


def test_paired_summary_fields():
    s = bench.paired_summary([0.9, 0.8, 0.85, 0.82, 0.88, 0.84, 0.86, 0.83])
    assert s["q1"] <= s["median"] <= s["q3"]
    assert s["ci_lo"] <= s["median"] <= s["ci_hi"]
