"""Release gate: compare a current run with a baseline and say which metric regressed.

A metric *regresses* when it moved the wrong way (latency up, tokens/s or capacity down, error
rate up) by more than the allowed fraction AND the move is statistically significant, so that
run-to-run noise is not called a regression. What "significant" means per metric:

- **Latency percentiles** (TTFT, ITL, TPOT, e2e at p50/p95/p99, ms from the scheduled send; and
  TTFAT, the first answer token, where either run reasoned or called tools before answering):
  both must hold, at level `alpha`:
  1. a one-sided Mann–Whitney U test on one value per request says the current requests are
     slower (faster, for an improvement). For TTFT, TTFAT, TPOT and e2e the value is the request's own
     number; for ITL it is the request's mean gap, since gaps within one request are not
     independent;
  2. a seeded bootstrap over requests (requests resampled with replacement, in each run
     separately; for ITL a resampled request brings all its gaps) gives the ratio
     current/baseline of that percentile; its one-sided `1 − alpha` bound must lie beyond the
     threshold (lower bound > 1 + max for a regression, upper bound < 1 − max for an improvement).
- **Error rate**: a one-sided Fisher exact test on the error/ok counts of the two runs.
- **Capacity** (`capacity.rate_rps`, when both reports have it): the two `ci95` intervals must not
  overlap; without intervals the threshold alone decides.
- **Output tokens/s** is one number per run with no per-request spread: the threshold alone decides;
  so are **items/s** where both runs sent items (an API of items: `metrics.items.items_per_s`).
  Two runs of items alone get no rows of token times (TTFT, ITL, TPOT) or tokens/s: none apply.

**What it could not see.** Each latency row also carries its minimum detectable effect (`mde`,
loadgen.compare.compare_power): the smallest true move its one-sided test at level `alpha` would
detect with 80% power at these sample sizes and this spread, from the bootstrap above (no extra
cost). A latency row that is not a regression ("ok" or "not significant") and whose MDE exceeds
the threshold is *inconclusive*: a move as large as the threshold could have gone unseen. Every
percentile counts, p99 included: it is the least powered (a short run's p99 rests on its few
slowest requests) and the one SLOs are most often set on, so a gate that says "no regression"
about it must have been able to see one. The comparison's verdict: any regression → "regression"
(a detected one stays one, whatever else could not be seen); else any inconclusive row, or no
MDE at all (no requests.jsonl: summary numbers by threshold only, nothing to size a move by) →
"inconclusive"; else "no regression".

Per-request values come from `requests.jsonl` beside each report: records past warm-up with status
ok (failures are judged by the error rate). A run with more than COMPARE_SAMPLE records
(compare_inputs) is tested on a uniform random sample of that many, and the result says so in its
notes; its error counts stay exact. Without that file for either run, only the summary numbers of
report.json are compared, by threshold alone, and the result says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import numpy as np
from scipy import stats as scipy_stats

from loadgen.compare.compare_inputs import LatencySample, RunData
from loadgen.compare.compare_power import format_mde, minimum_detectable_effect
from loadgen.compare.gated_latencies import latency_names, latency_sample, of_items_only, report_latency
from loadgen.evaluate.resampling import repeated_percentiles
from loadgen.fmt import format_number
from loadgen.report.model.evaluation import Capacity

Verdict = Literal["ok", "regression", "improvement", "not significant", "inconclusive", "n/a"]
Overall = Literal["regression", "inconclusive", "no regression"]
LATENCY_PERCENTILES: tuple[str, ...] = ("p50", "p95", "p99")
_QUANTILE = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


class RowData(TypedDict):
    """A Row as `loadtest compare --json` writes it (an infinite change or MDE as null)."""

    metric: str
    unit: str
    baseline: float | None
    current: float | None
    change: float | None
    p_value: float | None
    mde: float | None
    verdict: Verdict
    test: str


class ComparisonData(TypedDict):
    """What `loadtest compare --json` writes: the verdict, the limits it was judged by, every row."""

    verdict: Overall
    regressed: bool
    summary: str
    max_regression: float
    alpha: float
    per_request: bool
    notes: list[str]
    rows: list[RowData]


@dataclass(frozen=True)
class Settings:
    max_regression: float = 0.10
    alpha: float = 0.01
    resamples: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class Row:
    metric: str
    unit: str
    baseline: float | None
    current: float | None
    change: float | None  # current / baseline − 1; inf when the baseline was 0
    p_value: float | None  # of the one-sided test in the direction of the change
    verdict: Verdict
    test: str
    # Latency rows: the smallest true move (a fraction) this row's test would detect with 80%
    # power (module docstring); None for rows without per-request spread.
    mde: float | None = None

    def to_dict(self) -> RowData:
        change = self.change if self.change is None or math.isfinite(self.change) else None
        mde = self.mde if self.mde is None or math.isfinite(self.mde) else None
        return {
            "metric": self.metric,
            "unit": self.unit,
            "baseline": self.baseline,
            "current": self.current,
            "change": change,
            "p_value": self.p_value,
            "mde": mde,
            "verdict": self.verdict,
            "test": self.test,
        }


@dataclass(frozen=True)
class Comparison:
    rows: list[Row]
    settings: Settings
    per_request: bool
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Row]:
        return [row for row in self.rows if row.verdict == "regression"]

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    @property
    def inconclusive(self) -> list[Row]:
        return [row for row in self.rows if row.verdict == "inconclusive"]

    @property
    def detectable(self) -> float | None:
        """The largest MDE of the latency rows that saw no move (an improvement showed what it
        could see): a move this large would have been detected (80% power) on every one of them.
        None when no such row has one."""
        mdes = [row.mde for row in self.rows if row.mde is not None and row.verdict != "improvement"]
        return max(mdes) if mdes else None

    @property
    def verdict(self) -> Overall:
        if self.regressed:
            return "regression"
        if self.inconclusive or all(row.mde is None for row in self.rows):
            return "inconclusive"
        return "no regression"

    def summary(self) -> str:
        limits = f"max regression {format_number(self.settings.max_regression * 100)}%"
        if self.per_request:
            limits += f", alpha {format_number(self.settings.alpha)}"
        verdict = self.verdict
        if verdict == "regression":
            moved = ", ".join(f"{row.metric} {format_change(row.change)}" for row in self.regressions)
            count = len(self.regressions)
            return f"{count} regression{'s' if count > 1 else ''}: {moved} ({limits})"
        detectable = self.detectable
        if verdict == "no regression" and detectable is not None:
            return f"no regression detected; a move of ≥ {format_mde(detectable)} would have been ({limits})"
        if verdict == "no regression":
            return f"no regression: every latency row improved ({limits})"
        if not self.inconclusive and not self.per_request:
            why = "no requests.jsonl, so no minimum detectable effect: summary numbers by threshold only"
            return f"inconclusive: {why} ({limits})"
        if not self.inconclusive:
            return f"inconclusive: no successful requests' latencies to size a move by ({limits})"
        return f"inconclusive: {_blind_spots(self.inconclusive)} ({limits})"

    def headline(self) -> str:
        """The one line a terminal ends with: REGRESSION, INCONCLUSIVE or OK, and the summary."""
        summary = self.summary()
        if self.verdict == "inconclusive":
            return "INCONCLUSIVE" + summary.removeprefix("inconclusive")
        return f"{'REGRESSION' if self.regressed else 'OK'}: {summary}"

    def to_dict(self) -> ComparisonData:
        return {
            "verdict": self.verdict,
            "regressed": self.regressed,
            "summary": self.summary(),
            "max_regression": self.settings.max_regression,
            "alpha": self.settings.alpha,
            "per_request": self.per_request,
            "notes": self.notes,
            "rows": [row.to_dict() for row in self.rows],
        }


def _blind_spots(rows: list[Row]) -> str:
    """'ttft p99 could only detect moves of ≥ 38%', more rows grouped by metric:
    'ttft p95 could only detect moves of ≥ 15%, p99 ≥ 17%; itl p99 ≥ 12%'."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        name, _, key = row.metric.rpartition(" ")
        groups.setdefault(name, []).append(f"{key} ≥ {format_mde(row.mde)}")
    text = "; ".join(f"{name} {', '.join(moves)}" for name, moves in groups.items())
    first, _, rest = text.partition(" ≥ ")
    return f"{first} could only detect moves of ≥ {rest}"


def format_change(change: float | None) -> str:
    if change is None:
        return "—"
    if not math.isfinite(change):
        return "+∞"
    return f"{change * 100:+.1f}%"


# ---------------------------------------------------------------------------------------------
# Judging


def _judge(change: float | None, worse_if_up: bool, worse: bool, better: bool, threshold: float) -> Verdict:
    """`worse`/`better`: the move in that direction is significant (True when nothing is tested)."""
    if change is None:
        return "n/a"
    signed = change if worse_if_up else -change
    if signed > threshold:
        return "regression" if worse else "not significant"
    if signed < -threshold:
        return "improvement" if better else "not significant"
    return "ok"


def _change(baseline: float | None, current: float | None) -> float | None:
    if baseline is None or current is None:
        return None
    if baseline == 0:
        return 0.0 if current == 0 else math.inf
    return current / baseline - 1.0


def _bootstrap(sample: LatencySample, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """(resamples, percentiles): the percentiles of the sample with requests resampled.

    The same numbers as np.percentile (linear) over the values repeated by their request's draw
    count, without building that array (resampling.repeated_percentiles)."""
    n = sample.requests
    order = np.argsort(sample.values, kind="stable")
    values, owner = sample.values[order], sample.owner[order]
    fractions = np.array([_QUANTILE[key] for key in LATENCY_PERCENTILES]) / 100.0
    out = np.empty((resamples, len(fractions)))
    for index in range(resamples):
        counts = np.bincount(rng.integers(0, n, n), minlength=n)
        out[index] = repeated_percentiles(values, owner, counts, fractions)
    return out


def compare_latency(name: str, base: LatencySample, cur: LatencySample, settings: Settings) -> list[Row]:
    """Rows `<name> p50/p95/p99` judged by the rank test and the bootstrap (module docstring)."""
    if base.requests == 0 or cur.requests == 0:
        return [
            Row(f"{name} {key}", "ms", None, None, None, None, "n/a", "no data")
            for key in LATENCY_PERCENTILES
        ]
    quantiles = [_QUANTILE[key] for key in LATENCY_PERCENTILES]
    base_q = np.percentile(base.values, quantiles)
    cur_q = np.percentile(cur.values, quantiles)
    p_up = float(scipy_stats.mannwhitneyu(cur.per_request, base.per_request, alternative="greater").pvalue)
    p_down = float(scipy_stats.mannwhitneyu(cur.per_request, base.per_request, alternative="less").pvalue)
    rng = np.random.default_rng(settings.seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = _bootstrap(cur, rng, settings.resamples) / _bootstrap(base, rng, settings.resamples)
    lower = np.nanquantile(ratios, settings.alpha, axis=0)
    upper = np.nanquantile(ratios, 1.0 - settings.alpha, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mdes = minimum_detectable_effect(np.log(ratios), settings.alpha)
    threshold = settings.max_regression
    rows = []
    for index, key in enumerate(LATENCY_PERCENTILES):
        change = _change(float(base_q[index]), float(cur_q[index]))
        worse = p_up < settings.alpha and bool(lower[index] > 1.0 + threshold)
        better = p_down < settings.alpha and bool(upper[index] < 1.0 - threshold)
        p_value = p_down if change is not None and change < 0 else p_up
        verdict = _judge(change, True, worse, better, threshold)
        mde = float(mdes[index])
        if verdict in ("ok", "not significant") and mde > threshold:
            verdict = "inconclusive"  # a move as large as the threshold could have gone unseen
        rows.append(
            Row(
                f"{name} {key}",
                "ms",
                float(base_q[index]),
                float(cur_q[index]),
                change,
                p_value,
                verdict,
                "mann-whitney + bootstrap",
                mde,
            )
        )
    return rows


def compare_error_rate(base: RunData, cur: RunData, settings: Settings) -> Row:
    """Error rate with a one-sided Fisher exact test on the counts (threshold only without counts)."""
    if base.requests == 0 or cur.requests == 0:
        return Row("error rate", "", None, None, None, None, "n/a", "no data")
    base_rate, cur_rate = base.errors / base.requests, cur.errors / cur.requests
    change = _change(base_rate, cur_rate)
    table = [[cur.errors, cur.requests - cur.errors], [base.errors, base.requests - base.errors]]
    p_up = float(scipy_stats.fisher_exact(table, alternative="greater").pvalue)
    p_down = float(scipy_stats.fisher_exact(table, alternative="less").pvalue)
    worse, better = p_up < settings.alpha, p_down < settings.alpha
    p_value = p_down if change is not None and change < 0 else p_up
    verdict = _judge(change, True, worse, better, settings.max_regression)
    return Row("error rate", "", base_rate, cur_rate, change, p_value, verdict, "fisher exact")


def compare_threshold(
    metric: str, unit: str, base: float | None, cur: float | None, worse_if_up: bool, settings: Settings
) -> Row:
    """A summary number judged by the threshold alone (no per-request data behind it)."""
    base_value = float(base) if isinstance(base, int | float) else None
    cur_value = float(cur) if isinstance(cur, int | float) else None
    change = _change(base_value, cur_value)
    verdict = _judge(change, worse_if_up, True, True, settings.max_regression)
    return Row(metric, unit, base_value, cur_value, change, None, verdict, "threshold only")


def compare_capacity(base: Capacity, cur: Capacity, settings: Settings) -> Row:
    """capacity.rate_rps: significant when the two ci95 intervals do not overlap."""
    row = compare_threshold("capacity", "req/s", base.rate_rps, cur.rate_rps, False, settings)
    base_ci, cur_ci = base.ci95, cur.ci95
    if not (base_ci and cur_ci and len(base_ci) == len(cur_ci) == 2):
        return row
    worse = cur_ci[1] < base_ci[0]
    better = cur_ci[0] > base_ci[1]
    verdict = _judge(row.change, False, worse, better, settings.max_regression)
    return Row(row.metric, row.unit, row.baseline, row.current, row.change, None, verdict, "ci95 overlap")


def compare_runs(base: RunData, cur: RunData, settings: Settings) -> Comparison:
    """Every row of the release gate for two loaded runs."""
    notes = [
        f"{run.source} has verdict {run.report.verdict!r}: {run.report.reason}"
        for run in (base, cur)
        if run.report.verdict == "error"
    ]
    notes += [note for run in (base, cur) if (note := run.sample_note()) is not None]
    rows: list[Row] = []
    per_request = base.latencies is not None and cur.latencies is not None
    names = latency_names(base, cur)
    of_items = of_items_only(base, cur)
    if base.latencies is not None and cur.latencies is not None:
        for name in names:
            old, new = latency_sample(base.latencies, name), latency_sample(cur.latencies, name)
            rows += compare_latency(name, old, new, settings)
        rows.append(compare_error_rate(base, cur, settings))
    else:
        missing = [str(run.source.parent) for run in (base, cur) if run.latencies is None]
        notes.append(
            f"no requests.jsonl in {', '.join(missing)}: compared the summary numbers only, "
            "by threshold, without a statistical test"
        )
        base_m, cur_m = base.report.metrics, cur.report.metrics
        for name in names:
            base_p, cur_p = report_latency(base_m, name), report_latency(cur_m, name)
            for key, base_v, cur_v in (
                ("p50", base_p.p50, cur_p.p50),
                ("p95", base_p.p95, cur_p.p95),
                ("p99", base_p.p99, cur_p.p99),
            ):
                rows.append(compare_threshold(f"{name} {key}", "ms", base_v, cur_v, True, settings))
        rows.append(compare_threshold("error rate", "", base_m.error_rate, cur_m.error_rate, True, settings))
    base_tokens, cur_tokens = base.report.metrics.output_tokens_per_s, cur.report.metrics.output_tokens_per_s
    if not of_items or base_tokens or cur_tokens:
        rows.append(compare_threshold("output tokens/s", "tok/s", base_tokens, cur_tokens, False, settings))
    base_items, cur_items = base.report.metrics.items, cur.report.metrics.items
    if base_items is not None and cur_items is not None:  # an API of items' throughput, as tokens/s
        rows.append(
            compare_threshold(
                "items/s", "items/s", base_items.items_per_s, cur_items.items_per_s, False, settings
            )
        )
    base_cap, cur_cap = base.report.capacity, cur.report.capacity
    if base_cap is not None and cur_cap is not None:
        rows.append(compare_capacity(base_cap, cur_cap, settings))
    return Comparison(rows, settings, per_request, notes)
