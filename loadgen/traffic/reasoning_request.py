"""What a request asks of a reasoning model (workload.reasoning): a longer output budget, the
reasoning length the built-in servers should stream, and a reasoning effort.

The reasoning length is drawn per request from a generator seeded by the request's id and class,
not from the plan's streams: a scenario without reasoning plans exactly as before, and a request
asks for the same length in every run of the same plan.
"""

from __future__ import annotations

import zlib

import numpy as np

from loadgen.scenario.distributions import sample
from loadgen.scenario.workload import Workload
from loadgen.wire.call import ReasoningAsk


def reasoning_tokens_of(workload: Workload, request_class: str, request_id: int) -> int:
    """This request's reasoning length (0 when the workload asks for none)."""
    spec = workload.reasoning
    if spec is None or spec.tokens is None:
        return 0
    rng = np.random.default_rng((zlib.crc32(request_class.encode()), request_id))
    return int(sample(spec.tokens, 1, rng)[0])


def reasoning_ask(workload: Workload, tokens: int) -> ReasoningAsk | None:
    """What a reasoning request asks (None without workload.reasoning); its API renders it."""
    spec = workload.reasoning
    if spec is None:
        return None
    return ReasoningAsk(spec.effort, tokens, spec.emitted_format(workload.api))
