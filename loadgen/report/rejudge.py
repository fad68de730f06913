"""A run whose sends were late is re-judged before it is called untrustworthy.

The schedule-lag bound exists to catch a client that falls behind: its latencies then include
its own delay, and no verdict built on them can be trusted. A few sends late by a stall (a busy
machine's, or ours) are another matter: when every answer comes out the same with the late
requests' latencies reduced by their own lag (what the server did) and with them left out, no
answer depends on them, and the run keeps its verdict with one warning line. It stays
untrusted (exit 2) when an answer changes in either view, when the lateness is sustained (the
client behind, not stalled: loadgen.collect.late_sends), when its CPU passed its bound, or when
the records to re-judge from are not at hand (`--records summary`).

The answers re-judged: every SLO's pass or fail (the run's and each class's and adapter's);
a search's knee and capacity level are re-judged by loadgen.report.search_report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from loadgen.collect.late_sends import (
    VARIANT_WORDS,
    VARIANTS,
    LateSends,
    LateSendScan,
    Variant,
    adjust_dicts,
    adjust_records,
)
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from loadgen.collect.stats import run_stats
from loadgen.collect.windows import PhaseWindow
from loadgen.evaluate.slo import SLOResult
from loadgen.report.model.client import Client
from loadgen.report.scan import scan_records


class LateView(Protocol):
    """A run's late sends, and its statistics in either view of them."""

    def late(self) -> LateSends: ...

    def stats(self, variant: Variant) -> RunStats: ...


@dataclass(frozen=True)
class FileLateView:
    """From requests.jsonl: the late sends found by the report's one pass (`scan`), each view
    one more pass (only runs that crossed the bound pay for it)."""

    path: Path
    windows: Sequence[PhaseWindow]
    scan: LateSendScan

    def late(self) -> LateSends:
        return self.scan.result(measured_time(self.windows))

    def stats(self, variant: Variant) -> RunStats:
        bound = self.scan.bound_ms
        return scan_records(self.path, self.windows, adjust=lambda chunk: adjust_dicts(chunk, variant, bound))


@dataclass(frozen=True)
class MemoryLateView:
    """From records in memory (a search's, the tests')."""

    records: Sequence[RequestRecord]
    windows: Sequence[PhaseWindow]
    bound_ms: float
    measured_s: float | None = None  # the time the records were measured over: the windows'

    def late(self) -> LateSends:
        scan = LateSendScan(self.bound_ms)
        scan.add_records(self.records)
        return scan.result(measured_time(self.windows) if self.measured_s is None else self.measured_s)

    def stats(self, variant: Variant) -> RunStats:
        return run_stats(adjust_records(self.records, variant, self.bound_ms), self.windows)


def measured_time(windows: Sequence[PhaseWindow]) -> float:
    return sum(window.duration_s for window in windows)


# A run's answers, by name, as sentences ("ttft p95 fails"): None, as measured; else in a view.
Answers = Callable[[Variant | None], Mapping[str, str]]


def slo_answers(slos: Sequence[SLOResult]) -> dict[str, str]:
    return {result.name: f"{result.name} {'passes' if result.passed else 'fails'}" for result in slos}


def changed_answers(answers: Answers) -> list[str]:
    """Each answer that differs in a view: 'ttft p99 passes with them left out'."""
    measured = answers(None)
    changed = []
    for variant in VARIANTS:
        for name, sentence in answers(variant).items():
            if measured.get(name, sentence) != sentence:
                changed.append(f"{sentence} {VARIANT_WORDS[variant]}")
    return changed


def rejudge_client(
    client: Client,
    late: LateSends | None,
    answers: Answers,
    *,
    cpu_exceeded: bool,
    note: str = "",
) -> Client:
    """`client` as client_trust judged it (with `late` as its `late_sends`, `depends` null, and no
    warning), re-judged when only its lag bound was crossed (module docstring): a copy with
    `trustworthy`, `untrusted_because`, `warning` and `late_sends.depends` set. `note`: what the
    machine's own stalls say of the late sends, for the warning (', 3 of them while the machine
    stalled')."""
    sends = client.late_sends
    if late is None or sends is None or client.trustworthy or cpu_exceeded or not late.count:
        return client
    lag = client.untrusted_because
    judged = client.model_copy()
    if late.sustained:
        judged.untrusted_because = f"{lag}, sustained ({late.sustained_words()})"
        return judged
    changed = changed_answers(answers)
    judged.late_sends = sends.model_copy()
    judged.late_sends.depends = changed
    if changed:
        depends = "; ".join(changed)
        judged.untrusted_because = f"{lag}, and the verdict depends on the late sends: {depends}"
        return judged
    judged.trustworthy, judged.untrusted_because = True, None
    judged.warning = f"{late.words()}{note} ({lag}); no verdict depends on them"
    return judged
