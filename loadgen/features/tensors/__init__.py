"""KServe v2 tensors (`workload.tensors`: spec): an `api: kserve_v2` request sends a drawn batch
of items (draws) of each of the model's inputs, cut from pools made before the load (pools,
attach), the inputs and outputs read from the model's metadata where the scenario does not give
them (prepare); its answer is checked against the outputs (loadgen.wire.kserve_v2). Its record's
`items` (the batch) and report.json's `metrics.items` (inferences per second) are the core's, for
any API of items."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.slice import Slice
from loadgen.features.tensors.key import SPEC

if TYPE_CHECKING:
    from loadgen.features.slice import Attaches, Draws, Prepares


def _draws() -> Draws:
    from loadgen.features.tensors.draws import TENSOR_DRAWS

    return TENSOR_DRAWS


def _attaches() -> Attaches:
    from loadgen.features.tensors.attach import TENSOR_ATTACHMENT

    return TENSOR_ATTACHMENT


def _prepares() -> Prepares:
    from loadgen.features.tensors.prepare import TENSOR_PREPARATION

    return TENSOR_PREPARATION


TENSORS = Slice("tensors", {}, None, draws=_draws, attaches=_attaches, prepares=_prepares, spec=SPEC)
