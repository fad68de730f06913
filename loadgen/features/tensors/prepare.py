"""What the tensors slice learns before the load (loadgen.features.slice.Prepares): a KServe v2
model's inputs and outputs, read from its metadata (`GET /v2/models/{model}`) where the scenario
does not give them, checked as the scenario's own would be (datatypes, every item dimension
known, the largest batch's weight); and the probe's request, a batch of one."""

from __future__ import annotations

from pydantic import ValidationError

from loadgen.features.slice import Asking, Attached, Fetch
from loadgen.features.tensors.attach import TENSOR_ATTACHMENT, spec_of
from loadgen.features.tensors.key import SPEC
from loadgen.features.tensors.spec import TensorShape
from loadgen.scenario.workload import Workload
from loadgen.wire.kserve_v2 import metadata_path, read_metadata


class TensorPreparation:
    def learn(self, workload: Workload, model: str, fetch: Fetch) -> Workload:
        if workload.api != "kserve_v2":
            return workload
        spec = spec_of(workload)
        if spec.inputs is not None and spec.outputs is not None:
            TENSOR_ATTACHMENT.pools(spec)  # the data checked now, not at the first request
            return workload
        path = metadata_path(model)
        try:
            inputs, outputs = read_metadata(fetch(path))
            given = {"inputs": spec.inputs, "outputs": spec.outputs}
            told = {"inputs": inputs, "outputs": outputs}
            unset = [key for key, value in given.items() if value is None]
            learned = spec.model_copy(update={key: [_shape(each) for each in told[key]] for key in unset})
            learned.check_size()
            TENSOR_ATTACHMENT.pools(learned)
        except ValueError as exc:
            raise ValueError(f"model {model}'s metadata ({path}): {_reason(exc)}") from None
        return workload.model_copy(update={SPEC.key: learned})

    def probe(self, workload: Workload) -> Attached | None:
        if workload.api != "kserve_v2":
            return None
        return TENSOR_ATTACHMENT.attach(workload, Asking("probe", 0, 1, None))


def _shape(tensor: dict[str, object]) -> TensorShape:
    """A metadata tensor as the scenario's: its datatype one the tool sends, its batch -1."""
    try:
        return TensorShape.model_validate(tensor)
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        hint = " (give workload.tensors.inputs and outputs for a model that does not batch)"
        raise ValueError(f"tensor {tensor.get('name')}: {problem}{hint}") from None


def _reason(exc: ValueError) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


TENSOR_PREPARATION = TensorPreparation()
