"""Which latencies the release gate compares (loadgen.compare.gate): TTFT, ITL, TPOT and e2e; TTFAT
where an answer came after thinking or a tool call; and for two runs of an API of items alone
(embeddings, rerank: whole answers) e2e only, as no request has a first token or gaps to time.
compare.html draws the same metrics' CDFs."""

from __future__ import annotations

from loadgen.compare.compare_inputs import LatencySample, RunData
from loadgen.report.model.metrics import Metrics, Percentiles

LATENCY_METRICS: tuple[str, ...] = ("ttft", "itl", "tpot", "e2e")


def latency_names(base: RunData, cur: RunData) -> list[str]:
    """LATENCY_METRICS, and `ttfat` after `ttft` where either run has answers that did not begin
    with their stream's first token (reasoning or a tool call first). In a run without, TTFAT is
    TTFT (its report says the same figures): a row of its own would only repeat it. Two runs of
    items (of_items_only) keep only the latencies either measured: e2e, not token times."""
    names = list(LATENCY_METRICS)
    if any(_answers_apart(run) for run in (base, cur)):
        names = ["ttft", "ttfat", *LATENCY_METRICS[1:]]
    if of_items_only(base, cur):
        names = [
            name for name in names if name == "e2e" or _has_latency(base, name) or _has_latency(cur, name)
        ]
    return names


def of_items_only(base: RunData, cur: RunData) -> bool:
    """Both runs sent items (an API of items: report.json has `metrics.items`)."""
    return base.report.metrics.items is not None and cur.report.metrics.items is not None


def _has_latency(run: RunData, name: str) -> bool:
    """Whether the run measured this latency at all (whole answers have no token times)."""
    if run.latencies is not None:
        return latency_sample(run.latencies, name).requests > 0
    return report_latency(run.report.metrics, name).p50 is not None


def _answers_apart(run: RunData) -> bool:
    if run.latencies is not None:
        return "ttfat" in run.latencies
    return run.report.metrics.ttfat_ms != run.report.metrics.ttft_ms


def latency_sample(latencies: dict[str, LatencySample], name: str) -> LatencySample:
    """One metric's sample; a run without a `ttfat` one answered with its first tokens."""
    if name == "ttfat" and name not in latencies:
        return latencies["ttft"]
    return latencies[name]


def report_latency(metrics: Metrics, name: str) -> Percentiles:
    """The report's percentiles of one of latency_names()."""
    return {
        "ttft": metrics.ttft_ms,
        "ttfat": metrics.ttfat_ms,
        "itl": metrics.itl_ms,
        "tpot": metrics.tpot_ms,
        "e2e": metrics.e2e_ms,
    }[name]
