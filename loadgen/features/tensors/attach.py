"""A KServe v2 request's tensors (`workload.tensors`): its drawn batch of items from each input's
pool (pools), and the outputs its answer must hold. Its batch is the request's draw (1 where the
class drew none). The items sent are the core's `items` (inferences), for any API of items."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.slice import Asking, Attached
from loadgen.features.tensors.key import SPEC
from loadgen.features.tensors.pools import Pool, make_pools
from loadgen.features.tensors.spec import TensorsSpec
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult
from loadgen.wire.call import TensorCheck, TensorData, TensorsAsk

DEFAULT_SPEC = TensorsSpec()  # a kserve_v2 workload without the key: a batch of one, random
_SPREAD = 7919  # a request's first item: its id times this (a prime), in the pool


def spec_of(workload: Workload) -> TensorsSpec:
    return SPEC.of(workload) or DEFAULT_SPEC


class TensorAttachment:
    """The slice's part of a request (loadgen.features.slice.Attaches). Its pools are made once
    per spec (a class's), the first time it is asked for them."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[TensorsSpec, tuple[Pool, ...], tuple[TensorCheck, ...]]] = {}

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        sending = frozenset(name for name, workload in classes.items() if workload.api == "kserve_v2")
        for name in sending:
            self.pools(spec_of(classes[name]))
        return sending

    def pools(self, spec: TensorsSpec) -> tuple[tuple[Pool, ...], tuple[TensorCheck, ...]]:
        """`spec`'s pools and output checks (ValueError: its data won't do; see make_pools)."""
        made = self._made.get(id(spec))
        if made is None or made[0] is not spec:
            checks = tuple(TensorCheck(each.name, tuple(each.shape)) for each in spec.outputs or ())
            made = self._made[id(spec)] = (spec, make_pools(spec), checks)
        return made[1], made[2]

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        spec = spec_of(workload)
        pools, checks = self.pools(spec)
        batch = max(asking.drawn, 1)
        start = asking.request_id * _SPREAD
        inputs = [
            TensorData(
                pool.input.name,
                pool.input.datatype,
                (batch, *pool.input.item_shape),
                pool.raw_batch(start, batch) if spec.binary else pool.json_batch(start, batch),
            )
            for pool in pools
        ]
        return Attached(tensors=TensorsAsk(inputs, checks, batch, spec.binary, str(asking.request_id)))

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> Mapping[str, ExtraValue]:
        return {}  # the items sent are the core's `items`, for any API of items


TENSOR_ATTACHMENT = TensorAttachment()
