"""Exact per-second tallies of every record of a run: what a chart that COUNTS draws.

Charts of counts (requests due and sent, requests in flight, failures by kind, output tokens,
successful completions) must not come from a sample: a sampled count per bin is noisy and needs
scaling. `Timeline` takes every record in the same one pass that fills a `RecordSample`, keeps one
number per second of the run clock per tally (a 24-hour run: ~86,400 per tally, a few MB in all),
and sums them into any whole-second bin width (`loadgen.report.html.series.Bins`).

Records come as RequestRecords or as the dicts of requests.jsonl (the one-pass report's chunks);
times are seconds on the run clock. A time before 0 or past `MAX_SECONDS` is not tallied (no
chart covers it), so a corrupt time cannot make the arrays grow without bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from loadgen.collect.records import RequestRecord

MAX_SECONDS = 8 * 24 * 3600  # a day-long soak with a week to spare
Row = RequestRecord | Mapping[str, Any]


def _field(rows: Sequence[Row], name: str, default: Any) -> list[Any]:
    if rows and isinstance(rows[0], Mapping):
        return [row.get(name, default) for row in rows]  # type: ignore[union-attr]
    return [getattr(row, name) for row in rows]


def _times(rows: Sequence[Row], name: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in _field(rows, name, None)], dtype=float)


class Timeline:
    """Counts per second since the run's start (bin i is [i, i+1) s), grown as times arrive.

    Tallies: `scheduled`, `sent`, `done_ok` (successful completions), `tokens` (output tokens at
    `done_s`), one per failure kind in `errors` (at `done_s`, or `scheduled_s` without one: as
    the errors chart draws them), and for the in-flight mean the count and sum of the send times
    and of the end times of sent requests. `end_s`: the latest time seen.
    """

    def __init__(self) -> None:
        self.total = 0
        self.end_s = 0.0
        self._tallies: dict[str, np.ndarray] = {}
        self.errors: dict[str, np.ndarray] = {}

    @classmethod
    def of(cls, rows: Sequence[Row]) -> Timeline:
        timeline = cls()
        timeline.add(rows)
        return timeline

    def tally(self, name: str) -> np.ndarray:
        """One named per-second tally (zeros for one never added to)."""
        return self._tallies.get(name, np.zeros(0))

    def add(self, rows: Sequence[Row]) -> None:
        """Every record of one chunk."""
        if not rows:
            return
        self.total += len(rows)
        scheduled, sent, done = _times(rows, "scheduled_s"), _times(rows, "sent_s"), _times(rows, "done_s")
        status = np.array(_field(rows, "status", "ok"), dtype=object)
        http = _times(rows, "http_status")
        tokens = np.array(_field(rows, "output_tokens", 0), dtype=float)
        for times in (scheduled, sent, done):
            finite = times[np.isfinite(times)]
            if len(finite):
                self.end_s = max(self.end_s, float(finite.max()))
        self._add("scheduled", scheduled)
        self._add("sent", sent)
        self._add("sent_sum", sent, sent)
        ended = np.where(np.isfinite(sent), done, np.nan)  # an end only counts against a send
        self._add("ended", ended)
        self._add("ended_sum", ended, ended)
        ok = status == "ok"
        self._add("done_ok", np.where(ok, done, np.nan))
        # Cancellations, which the errors chart draws dashed beside (not among) the errors.
        self._add("cancelled", np.where(status == "cancelled", done, np.nan))
        self._add("tokens", done, tokens)
        self._add_errors(status, np.where(np.isfinite(done), done, scheduled), http)

    def _add_errors(self, status: np.ndarray, when: np.ndarray, http: np.ndarray) -> None:
        """Failures by kind, as the errors chart names them: timeout, HTTP <code>, error."""
        failed = (status != "ok") & (status != "cancelled")  # a cancellation is the client's choice
        if not failed.any():
            return
        timeouts = status == "timeout"
        errors = failed & ~timeouts
        coded = errors & np.isfinite(http) & (http != 200)
        kinds = {"timeout": timeouts, "error": errors & ~coded}
        for code in np.unique(http[coded]):
            kinds[f"HTTP {int(code)}"] = coded & (http == code)
        for kind, mask in kinds.items():
            if mask.any():
                self.errors[kind] = _grow_add(self.errors.get(kind, np.zeros(0)), when[mask], None)

    def _add(self, name: str, times: np.ndarray, weights: np.ndarray | None = None) -> None:
        self._tallies[name] = _grow_add(self.tally(name), times, weights)

    def error_kinds(self) -> list[str]:
        """'timeout' first, then HTTP codes in order, then plain 'error' (the chart's legend)."""
        codes = sorted((k for k in self.errors if k.startswith("HTTP ")), key=lambda k: int(k.split()[1]))
        return [k for k in ("timeout", *codes, "error") if k in self.errors]

    def in_flight_mean(self, edges: np.ndarray) -> np.ndarray:
        """Time-averaged requests in flight per bin, from [sent, done) intervals (a request never
        done counts until the last edge), as loadgen.report.html.series.in_flight_mean does from
        every record: F(T) = Σ_{s<T} (T − s) − Σ_{d<T} (T − d) at each edge, a bin's mean ΔF/width.
        Σ_{s<T} (T − s) = T·N(<T) − S(<T), both cumulative sums of the per-second tallies."""
        at = np.asarray(edges, dtype=float)
        seconds = at.astype(np.int64)

        def integral(count: np.ndarray, total: np.ndarray) -> np.ndarray:
            cumulative_n = np.concatenate(([0.0], np.cumsum(count)))
            cumulative_s = np.concatenate(([0.0], np.cumsum(total)))
            upto = np.minimum(seconds, len(count))
            area: np.ndarray = at * cumulative_n[upto] - cumulative_s[upto]
            return area

        area = integral(self.tally("sent"), self.tally("sent_sum"))
        area = area - integral(self.tally("ended"), self.tally("ended_sum"))
        mean: np.ndarray = np.diff(area) / np.diff(at)
        return mean


def coarsen(per_second: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Sums of a per-second array over the bins [edges[i], edges[i+1]), edges whole seconds."""
    bounds = np.asarray(edges, dtype=float).astype(np.int64)
    cumulative = np.concatenate(([0.0], np.cumsum(per_second, dtype=float)))
    upto = np.clip(bounds, 0, len(per_second))
    sums: np.ndarray = np.diff(cumulative[upto])
    return sums


def _grow_add(counts: np.ndarray, times: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """`counts` with each time's second incremented (by its weight), grown to fit."""
    inside = np.isfinite(times) & (times >= 0) & (times < MAX_SECONDS)
    seconds = times[inside].astype(np.int64)
    if not len(seconds):
        return counts
    added = np.bincount(seconds, weights=None if weights is None else weights[inside])
    if len(added) > len(counts):
        counts = np.concatenate((counts, np.zeros(len(added) - len(counts))))
    counts[: len(added)] += added
    return counts
