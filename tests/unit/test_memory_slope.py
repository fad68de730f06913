"""Memory growth's Theil–Sen slope, computed with numpy so a run need not import scipy.stats
(0.7 s of every run's start-up): the same number as scipy.stats.theilslopes on the same points."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import theilslopes

from loadgen.collect.memory import growth_per_min, theil_sen_slope


@pytest.mark.parametrize("n", [2, 3, 17, 400])
def test_the_slope_is_scipys_with_repeated_times_and_outliers(n: int) -> None:
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(0, 600, n))
    if n > 3:
        x[5:8] = x[5]  # samples taken at the same instant: no slope between them
    y = 100 + 0.25 * x + rng.normal(0, 3, n)
    y[:: max(2, n // 10)] += 500  # a few spikes: the median ignores them
    assert theil_sen_slope(x, y) == pytest.approx(theilslopes(y, x).slope, rel=1e-12, abs=1e-12)


def test_growth_is_per_minute_and_none_without_two_distinct_times() -> None:
    seconds = [0.0, 30.0, 60.0, 90.0, 120.0]
    rss = [100.0, 101.0, 102.0, 150.0, 104.0]  # 2 MB a minute, one outlier
    assert growth_per_min(seconds, rss) == pytest.approx(2.0)
    assert growth_per_min([5.0, 5.0], [1.0, 2.0]) is None


def test_a_run_imports_no_scipy_stats() -> None:
    """The run's modules (planning, traffic, report) leave scipy.stats out of the process."""
    import subprocess
    import sys

    code = "import sys, loadgen.cli.main, loadgen.run.execute; print('scipy.stats' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
