"""The live exporter's metric-name contract: names, labels, buckets and help texts.

Fixed: dashboards/ and the docker provisioning query these names, and tests/golden/metric_names.txt
pins them. Changing one here is a breaking change for every dashboard built on the exporter.

- histograms `loadtest_{ttft,ttfat,itl,e2e}_seconds{scenario, run_id, phase, class}`, and per
  group of a slice's grouping `loadtest_<label>_ttft_seconds{scenario, run_id, <label>}`
  (`loadtest_adapter_ttft_seconds{…, adapter}`: the requests naming each adapter);
- counters `loadtest_requests_total{…, status}`, `loadtest_{output,prompt}_tokens_total`, and the
  feature slices' (loadgen.features: the reasoning tokens received, the tool calls made);
- gauges `{scenario, run_id}`: in-flight, target rate, phase index, search level, knee, capacity,
  the server's figures, the counted devices' watts, `loadtest_slo_threshold{slo, unit}` and
  `loadtest_run_info{server_kind}`; the counter `loadtest_energy_joules_total{scenario, run_id}`
  (only while energy is measured: `server.energy`).
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.collect.slice_registry import Grouping
from loadgen.features import SLICES
from loadgen.features.slice import Counter

TTFT_SECONDS = "loadtest_ttft_seconds"
TTFAT_SECONDS = "loadtest_ttfat_seconds"
ITL_SECONDS = "loadtest_itl_seconds"
E2E_SECONDS = "loadtest_e2e_seconds"
HISTOGRAMS = (TTFT_SECONDS, TTFAT_SECONDS, ITL_SECONDS, E2E_SECONDS)


@dataclass(frozen=True)
class GroupHistogram:
    """The TTFT histogram of each group of a slice's grouping (one series a group)."""

    name: str
    labels: tuple[str, ...]
    help: str
    field: str  # the record's label field naming its group


def _group_histogram(grouping: Grouping) -> GroupHistogram:
    return GroupHistogram(
        f"loadtest_{grouping.label}_ttft_seconds",
        ("scenario", "run_id", grouping.label),
        f"Time to first token of each {grouping.noun}'s requests, from the scheduled send",
        grouping.field,
    )


GROUP_HISTOGRAMS = tuple(_group_histogram(s.groups) for s in SLICES if s.groups is not None)

# Counter names without the `_total` suffix the exposition adds.
REQUESTS = "loadtest_requests"
OUTPUT_TOKENS = "loadtest_output_tokens"
PROMPT_TOKENS = "loadtest_prompt_tokens"
ITEMS = "loadtest_items"  # an API of items' (embeddings' inputs, rerank's documents)
# The feature slices' counters: each the sum of one of their record fields, per phase and class.
SLICE_COUNTERS: tuple[Counter, ...] = tuple(counter for feature in SLICES for counter in feature.counters)
COUNTERS = (REQUESTS, OUTPUT_TOKENS, PROMPT_TOKENS, ITEMS, *(c.name for c in SLICE_COUNTERS))
# The counted devices' energy so far, with only the run's labels: J/token is its rate over the
# output tokens' rate (the dashboard's Energy panel).
ENERGY_JOULES = "loadtest_energy_joules"

IN_FLIGHT = "loadtest_in_flight"
TARGET_RATE = "loadtest_target_rate"
PHASE_INDEX = "loadtest_phase_index"
SEARCH_LEVEL = "loadtest_search_level"
KNEE_LEVEL = "loadtest_knee_level"
CAPACITY_RPS = "loadtest_capacity_rps"
UPSTREAM_RSS = "loadtest_upstream_rss_bytes"
UPSTREAM_GPU = "loadtest_upstream_gpu_bytes"
UPSTREAM_RUNNING = "loadtest_upstream_requests_running"
UPSTREAM_WAITING = "loadtest_upstream_requests_waiting"
UPSTREAM_KV_CACHE = "loadtest_upstream_kv_cache_usage_ratio"
# The slices' server counters shown live (loadgen.features: an adapter cache's misses so far).
UPSTREAM_COUNTERS = tuple(counter for s in SLICES for counter in s.server if counter.live is not None)
ENERGY_WATTS = "loadtest_energy_watts"
SLO_THRESHOLD = "loadtest_slo_threshold"
RUN_INFO = "loadtest_run_info"
# Gauges with only the run's labels (SLO thresholds and run info carry more).
RUN_GAUGES = (
    IN_FLIGHT, TARGET_RATE, PHASE_INDEX, SEARCH_LEVEL, KNEE_LEVEL, CAPACITY_RPS,
    UPSTREAM_RSS, UPSTREAM_GPU, UPSTREAM_RUNNING, UPSTREAM_WAITING, UPSTREAM_KV_CACHE,
    *(str(counter.live) for counter in UPSTREAM_COUNTERS), ENERGY_WATTS,
)  # fmt: skip
GAUGES = (*RUN_GAUGES, SLO_THRESHOLD, RUN_INFO)

# Every name as it appears on /metrics (histograms as their base name, counters with `_total`).
METRIC_NAMES: tuple[str, ...] = (
    *HISTOGRAMS,
    *(histogram.name for histogram in GROUP_HISTOGRAMS),
    *(name + "_total" for name in COUNTERS),
    ENERGY_JOULES + "_total",
    *GAUGES,
)

RUN_LABELS = ("scenario", "run_id")
REQUEST_LABELS = (*RUN_LABELS, "phase", "class")
STATUSES = ("ok", "error", "timeout")  # values of `status` on loadtest_requests_total

# Seconds, 1 ms … 60 s: fine where TTFT and ITL of small and fast servers live, wide enough for
# the e2e of long generations and for queueing under overload.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2,
    0.25, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip

HELP = {
    TTFT_SECONDS: "Time to first token of any kind (reasoning, answer, tool call), from the scheduled send",
    TTFAT_SECONDS: "Time to first answer token (after any reasoning), from the scheduled send time",
    ITL_SECONDS: "Gaps between streamed token chunks of any kind",
    E2E_SECONDS: "Request latency, from the scheduled send time to the last byte",
    **{histogram.name: histogram.help for histogram in GROUP_HISTOGRAMS},
    REQUESTS: "Finished requests by status",
    OUTPUT_TOKENS: "Output tokens received",
    PROMPT_TOKENS: "Prompt tokens sent (as the server counted them where it said)",
    ITEMS: "Items answered by an API of items (embeddings' inputs, rerank's documents)",
    **{counter.name: counter.help for counter in SLICE_COUNTERS},
    IN_FLIGHT: "Requests in flight now",
    TARGET_RATE: "Target request rate of the current phase (NaN for a closed-loop level)",
    PHASE_INDEX: "Index of the current traffic phase or search level",
    SEARCH_LEVEL: "Load level of the current search step (concurrency or req/s)",
    KNEE_LEVEL: "Load level of the knee found by the search",
    CAPACITY_RPS: "Highest request rate at which every SLO held",
    UPSTREAM_RSS: "Resident memory of the server's process tree",
    UPSTREAM_GPU: "GPU memory attributed to the server's processes",
    UPSTREAM_RUNNING: "Requests the server is running (its own metrics)",
    UPSTREAM_WAITING: "Requests waiting in the server's queue (its own metrics)",
    UPSTREAM_KV_CACHE: "KV-cache usage of the server, 0..1 (its own metrics)",
    **{str(counter.live): counter.live_help for counter in UPSTREAM_COUNTERS},
    ENERGY_WATTS: "Power of the devices counted for the server (server.energy), watts over the last sample",
    ENERGY_JOULES: "Energy of the devices counted for the server since it was ready, joules",
    SLO_THRESHOLD: "Threshold of each SLO of the scenario, in the unit of the `unit` label",
    RUN_INFO: "The run: scenario, run id and server kind",
}
