"""The live exporter's state: what the run has done so far, turned into metric families on every
scrape (a prometheus_client collector; no module-level metric objects).

Histograms count from the scheduled send time as in the report: e2e for every finished request
but a cancelled one (it did not complete), TTFT to the first token (to the end for a timeout
without one; an error without a token has none), ITL one observation per gap where the record
keeps a list of gaps. Each status counter starts at 0 for every phase and class seen, so an error
panel draws 0, not nothing; `cancelled` (stopped as planned) appears once a request is cancelled. Warm-up
requests count like any other: they are real traffic, and a live view without them would disagree
with the server's own metrics; the report leaves them out. No label marks them.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from loadgen.collect.field_doc import ExtraValue
from loadgen.collect.records import RequestRecord, first_answer_s
from loadgen.live.metric_names import (
    E2E_SECONDS,
    ENERGY_JOULES,
    GROUP_HISTOGRAMS,
    HELP,
    HISTOGRAMS,
    IN_FLIGHT,
    ITEMS,
    ITL_SECONDS,
    LATENCY_BUCKETS,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    REQUEST_LABELS,
    REQUESTS,
    RUN_GAUGES,
    RUN_INFO,
    RUN_LABELS,
    SLICE_COUNTERS,
    SLO_THRESHOLD,
    STATUSES,
    TTFAT_SECONDS,
    TTFT_SECONDS,
)

_BUCKETS_MS = tuple(round(edge * 1000.0, 6) for edge in LATENCY_BUCKETS)  # record.itl_ms is in ms


@dataclass
class _Histogram:
    """Bucket counts (not cumulative; the last one is +Inf) and the sum, for one label set."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, value: float, edges: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.counts[bisect.bisect_left(edges, value)] += 1  # `le` is inclusive
        self.total += value

    def observe_ms(self, values_ms: Iterable[float]) -> None:
        """Many values in milliseconds (ITL gaps), bucketed without converting each one."""
        counts, edges = self.counts, _BUCKETS_MS
        total = 0.0
        for value in values_ms:
            counts[bisect.bisect_left(edges, value)] += 1
            total += value
        self.total += total / 1000.0

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, out = 0, []
        for edge, count in zip((*LATENCY_BUCKETS, math.inf), self.counts, strict=True):
            cumulative += count
            out.append(("+Inf" if edge == math.inf else repr(edge), float(cumulative)))  # as client_python
        return out


@dataclass
class _Series:
    """The per-(phase, class) state of the request metrics."""

    histograms: dict[str, _Histogram] = field(default_factory=lambda: {n: _Histogram() for n in HISTOGRAMS})
    statuses: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0.0))
    output_tokens: float = 0.0
    prompt_tokens: float = 0.0
    items: float = 0.0  # answered (an API of items' requests that succeeded)
    # The feature slices' counters (metric_names.SLICE_COUNTERS), by name.
    counted: dict[str, float] = field(default_factory=lambda: {c.name: 0.0 for c in SLICE_COUNTERS})


def _answer_end(record: RequestRecord) -> float | None:
    """When TTFAT ends: the first answer token (the first token unless reasoning came first), or
    the timeout for a timed-out request without an answer; None when no answer came."""
    answer = first_answer_s(record)
    if answer is None and record.status == "timeout":
        return record.done_s
    return answer


class LiveMetrics(Collector):
    """The exporter's state, turned into metric families on every scrape. One lock guards it: the
    run's greenlet/thread writes while the HTTP server's reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.scenario = ""
        self.run_id = ""
        self.server_kind = ""
        self._series: dict[tuple[str, str], _Series] = {}  # (phase, class) →
        # Each group histogram's (GROUP_HISTOGRAMS, by position) group name → its requests' TTFT.
        self._groups: tuple[dict[str, _Histogram], ...] = tuple({} for _ in GROUP_HISTOGRAMS)
        self._gauges: dict[str, float] = {}
        self._counters: dict[str, float] = {}  # counters with only the run's labels (energy)
        self._slos: list[tuple[str, str, float]] = []
        self._in_flight: Callable[[], int] | None = None

    def start_run(
        self, scenario: str, run_id: str, server_kind: str, slos: list[tuple[str, str, float]]
    ) -> None:
        with self._lock:
            self.scenario, self.run_id, self.server_kind = scenario, run_id, server_kind
            self._slos = list(slos)

    def set_gauge(self, name: str, value: float) -> None:
        with self._lock:
            self._gauges[name] = value

    def set_counter(self, name: str, total: float) -> None:
        """A running total kept elsewhere (the energy sampler's joules), served as a counter."""
        with self._lock:
            self._counters[name] = total

    def watch_in_flight(self, in_flight: Callable[[], int]) -> None:
        self._in_flight = in_flight

    def add_record(self, record: RequestRecord) -> None:
        key = (str(record.phase), record.request_class)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series()
            series.statuses[record.status] = series.statuses.get(record.status, 0.0) + 1.0
            series.output_tokens += record.output_tokens
            series.prompt_tokens += record.prompt_tokens or 0
            if record.items is not None and record.status == "ok":
                series.items += record.items
            ttft_end = record.first_token_s
            if ttft_end is None and record.status == "timeout":
                ttft_end = record.done_s  # a lower bound, as in the report
            if ttft_end is not None:
                series.histograms[TTFT_SECONDS].observe(ttft_end - record.scheduled_s)
                if record.extra:  # a slice's label: its group's (an adapter's)
                    self._grouped(record.extra, ttft_end - record.scheduled_s)
            answer_end = _answer_end(record)
            if answer_end is not None:
                series.histograms[TTFAT_SECONDS].observe(answer_end - record.scheduled_s)
            if record.extra:
                for counter in SLICE_COUNTERS:
                    value = record.extra.get(counter.field)
                    series.counted[counter.name] += value if isinstance(value, int | float) else 0
            if record.done_s is not None and record.status != "cancelled":
                series.histograms[E2E_SECONDS].observe(record.done_s - record.scheduled_s)
            if isinstance(record.itl_ms, list):
                series.histograms[ITL_SECONDS].observe_ms(record.itl_ms)

    def _grouped(self, extra: Mapping[str, ExtraValue], ttft_s: float) -> None:
        """A record's TTFT into each group histogram its label fields name a group of."""
        for spec, groups in zip(GROUP_HISTOGRAMS, self._groups, strict=True):
            name = extra.get(spec.field)
            if isinstance(name, str):
                groups.setdefault(name, _Histogram()).observe(ttft_s)

    def collect(self) -> Iterator[Any]:
        in_flight = self._read_in_flight()  # outside the lock: it is the runner's code
        with self._lock:
            run = [self.scenario, self.run_id]
            yield from self._request_families(run)
            for name in RUN_GAUGES:
                value = in_flight if name == IN_FLIGHT else self._gauges.get(name)
                if value is not None:
                    family = GaugeMetricFamily(name, HELP[name], labels=RUN_LABELS)
                    family.add_metric(run, value)
                    yield family
            joules = self._counters.get(ENERGY_JOULES)
            if joules is not None:
                counter = CounterMetricFamily(ENERGY_JOULES, HELP[ENERGY_JOULES], labels=RUN_LABELS)
                counter.add_metric(run, joules)
                yield counter
            if self._slos:
                slo = GaugeMetricFamily(
                    SLO_THRESHOLD, HELP[SLO_THRESHOLD], labels=[*RUN_LABELS, "slo", "unit"]
                )
                for name, unit, value in self._slos:
                    slo.add_metric([*run, name, unit], value)
                yield slo
            if self.run_id:
                info = GaugeMetricFamily(RUN_INFO, HELP[RUN_INFO], labels=[*RUN_LABELS, "server_kind"])
                info.add_metric([*run, self.server_kind], 1.0)
                yield info

    def _read_in_flight(self) -> float | None:
        if self._in_flight is None:
            return None
        try:
            return float(self._in_flight())
        except Exception:  # a broken callable must not break the scrape
            return None

    def _request_families(self, run: list[str]) -> Iterator[Any]:
        histograms = {
            name: HistogramMetricFamily(name, HELP[name], labels=REQUEST_LABELS) for name in HISTOGRAMS
        }
        requests = CounterMetricFamily(REQUESTS, HELP[REQUESTS], labels=[*REQUEST_LABELS, "status"])
        output = CounterMetricFamily(OUTPUT_TOKENS, HELP[OUTPUT_TOKENS], labels=REQUEST_LABELS)
        prompt = CounterMetricFamily(PROMPT_TOKENS, HELP[PROMPT_TOKENS], labels=REQUEST_LABELS)
        items = CounterMetricFamily(ITEMS, HELP[ITEMS], labels=REQUEST_LABELS)
        counted = [CounterMetricFamily(c.name, HELP[c.name], labels=REQUEST_LABELS) for c in SLICE_COUNTERS]
        for (phase, request_class), series in sorted(self._series.items()):
            labels = [*run, phase, request_class]
            for name, histogram in series.histograms.items():
                histograms[name].add_metric(labels, histogram.buckets(), histogram.total)
            for status, count in series.statuses.items():
                requests.add_metric([*labels, status], count)
            output.add_metric(labels, series.output_tokens)
            prompt.add_metric(labels, series.prompt_tokens)
            items.add_metric(labels, series.items)
            for family in counted:
                family.add_metric(labels, series.counted[family.name])
        yield from histograms.values()
        yield from (requests, output, prompt, items, *counted)
        for spec, groups in zip(GROUP_HISTOGRAMS, self._groups, strict=True):
            if groups:
                grouped = HistogramMetricFamily(spec.name, spec.help, labels=spec.labels)
                for name, histogram in sorted(groups.items()):
                    grouped.add_metric([*run, name], histogram.buckets(), histogram.total)
                yield grouped
