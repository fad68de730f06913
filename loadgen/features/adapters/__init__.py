"""LoRA adapters (`workload.adapters`, loadgen.scenario.adapters): each request names one as its
model, drawn per request (draws), named in the call and recorded (attach, record)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.adapters.record import ADAPTER_FIELDS
from loadgen.features.slice import Slice

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
)
