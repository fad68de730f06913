"""What the release gate could have seen: the minimum detectable effect (MDE) of a latency row.

The smallest true move of a percentile that its one-sided test at level `alpha` would detect with
80% power, given the two runs' sample sizes and spread. It is read off the bootstrap the gate
already draws (loadgen.compare.gate: requests resampled in each run, the ratio
current/baseline of each percentile): with `s` the standard deviation of the resampled log ratio,

    MDE = exp((z_{1−alpha} + z_{0.80}) × s) − 1

the usual normal-approximation power formula on the log scale (a move is multiplicative). It
shrinks as 1/√n with the requests of each run: `s` is the spread of an estimated percentile.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as scipy_stats

POWER = 0.80  # the power at which a row's minimum detectable effect is quoted


def minimum_detectable_effect(log_ratios: np.ndarray, alpha: float, power: float = POWER) -> np.ndarray:
    """One MDE (a fraction) per column of `log_ratios` (resamples × percentiles). Resamples whose
    ratio is not finite (a percentile of 0 ms) are left out; a column with fewer than two finite
    ones has no spread to measure: inf (nothing could be said to be detectable)."""
    z = float(scipy_stats.norm.ppf(1.0 - alpha) + scipy_stats.norm.ppf(power))
    mde = np.full(log_ratios.shape[1], math.inf)
    for column in range(log_ratios.shape[1]):
        values = log_ratios[:, column]
        finite = values[np.isfinite(values)]
        if len(finite) >= 2:
            mde[column] = math.expm1(z * float(np.std(finite, ddof=1)))
    return mde


def format_mde(mde: float | None) -> str:
    """A minimum detectable effect as a move: '38.2%', '4.2%', '140%', '∞' (no spread could be
    measured)."""
    if mde is None:
        return "—"
    if not math.isfinite(mde):
        return "∞"
    percent = mde * 100
    return f"{percent:.0f}%" if percent >= 100 else f"{percent:.1f}%"
