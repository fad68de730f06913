"""A request's LoRA adapter (`workload.adapters`): named as the call's model (the slice's
attachment), and recorded, also for a request that failed before it was sent (its label)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.adapters.draws import adapter_name
from loadgen.features.adapters.key import SPEC
from loadgen.features.slice import Asking, Attached
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult


class AdapterAttachment:
    """The slice's part of a request (loadgen.features.slice.Attaches) and its label (Labels)."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        return frozenset(name for name, workload in classes.items() if SPEC.of(workload) is not None)

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        return Attached(model=adapter_name(SPEC.of(workload), asking.drawn))

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> dict[str, ExtraValue]:
        return {"adapter": attached.model}

    def label(self, workload: Workload, asking: Asking) -> dict[str, ExtraValue]:
        return {"adapter": adapter_name(SPEC.of(workload), asking.drawn)}


ADAPTER_ATTACHMENT = AdapterAttachment()
