"""What a request asks of a reasoning model (workload.reasoning): a longer output budget, the
reasoning length the built-in servers should stream, and a reasoning effort; and what the record
says of any answer's reasoning, asked for or not.

The reasoning length is drawn per request from a generator seeded by the request's id and class,
not from the plan's streams: a scenario without reasoning plans exactly as before, and a request
asks for the same length in every run of the same plan.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.reasoning.key import SPEC
from loadgen.features.slice import Asking, Attached
from loadgen.scenario.distributions import sample
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult
from loadgen.wire.call import ReasoningAsk

NOTHING_READ: Mapping[str, ExtraValue] = MappingProxyType({})  # an answer without reasoning


def reasoning_tokens_of(workload: Workload, request_class: str, request_id: int) -> int:
    """This request's reasoning length (0 when the workload asks for none)."""
    spec = SPEC.of(workload)
    if spec is None or spec.tokens is None:
        return 0
    rng = np.random.default_rng((zlib.crc32(request_class.encode()), request_id))
    return int(sample(spec.tokens, 1, rng)[0])


def reasoning_ask(workload: Workload, tokens: int) -> ReasoningAsk | None:
    """What a reasoning request asks (None without workload.reasoning); its API renders it."""
    spec = SPEC.of(workload)
    if spec is None:
        return None
    return ReasoningAsk(spec.effort, tokens, spec.emitted_format(workload.api))


class ReasoningAsker:
    """The slice's part of a request of a class with workload.reasoning
    (loadgen.features.slice.Attaches); what its answer showed is the reader's, as any answer's."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        return frozenset(name for name, workload in classes.items() if SPEC.of(workload) is not None)

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        spec = SPEC.of(workload)
        if spec is None:
            return Attached()
        tokens = reasoning_tokens_of(workload, asking.request_class, asking.request_id)
        # servers count reasoning in the output budget
        return Attached(reasoning=reasoning_ask(workload, tokens), budget=tokens, think=spec.format)

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> Mapping[str, ExtraValue]:
        return NOTHING_READ  # REASONING_READER's, asked for or not


class ReasoningReader:
    """The reasoning any answer showed (loadgen.features.slice.Reads)."""

    def fields(self, answer: StreamResult, streamed: bool) -> Mapping[str, ExtraValue]:
        if not answer.answer_later:
            return NOTHING_READ
        made: dict[str, ExtraValue] = {"reasoning_tokens": answer.reasoning_tokens}
        if streamed:
            made["reasoning_ms"] = answer.reasoning_ms()
        return made


REASONING_ASKER = ReasoningAsker()
REASONING_READER = ReasoningReader()
