"""LoRA adapters (`workload.adapters`: spec): each request names one as its
model, drawn per request (draws), named in the call and recorded (attach, record); the records
are grouped by it (report.json's `adapters`, `slo.adapters`, the live per-adapter TTFT)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.collect.slice_registry import Grouping, ServerCounter
from loadgen.features.adapters.key import SPEC
from loadgen.features.adapters.record import ADAPTER_FIELDS
from loadgen.features.slice import ServerLine, Slice

if TYPE_CHECKING:
    from loadgen.features.slice import Attaches, Draws, Labels


def _draws() -> Draws:
    from loadgen.features.adapters.draws import ADAPTER_DRAWS

    return ADAPTER_DRAWS


def _attaches() -> Attaches:
    from loadgen.features.adapters.attach import ADAPTER_ATTACHMENT

    return ADAPTER_ATTACHMENT


def _labels() -> Labels:
    from loadgen.features.adapters.attach import ADAPTER_ATTACHMENT

    return ADAPTER_ATTACHMENT


ADAPTERS = Slice(
    "adapters",
    ADAPTER_FIELDS,
    None,
    draws=_draws,
    attaches=_attaches,
    labels=_labels,
    groups=Grouping(
        "adapters",
        "adapter",
        "adapter",
        "LoRA adapter",
        "per LoRA adapter (`workload.adapters`), by name, when requests named any (`target_rate` null)",
    ),
    # The built-in engines' adapter cache (every adapter's requests summed): resident, or
    # loaded first (a miss); the misses so far live too.
    server=(
        ServerCounter(
            "loadtest_server_lora_hits_total",
            "lora_hits_total",
            "lora_hits",
            "LoRA adapters' requests whose adapter was resident (built-in engines with `lora`)",
        ),
        ServerCounter(
            "loadtest_server_lora_misses_total",
            "lora_misses_total",
            "lora_misses",
            "LoRA adapters' requests that had to load their adapter first (built-in engines)",
            live="loadtest_upstream_lora_misses",
            live_help="LoRA adapter loads (misses) the server counted so far (its own counter)",
        ),
    ),
    # report.md's line of them, under the server's own metrics
    server_lines=(
        ServerLine(
            "lora_misses",
            "- LoRA adapters: {lora_misses} requests had to load their adapter first (misses), "
            "{lora_hits} found it resident (the server's own counters)",
        ),
    ),
    spec=SPEC,
)
