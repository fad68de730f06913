"""An embeddings request's batch (`workload.embeddings`): the inputs after its prompt, and how
its vectors come back. Its input count is the request's draw (1 where the class drew none)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.embeddings.key import SPEC
from loadgen.features.slice import Asking, Attached
from loadgen.inputs.vocabulary import prompt_text
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult
from loadgen.wire.call import EmbeddingAsk

# The ids the batch's other inputs are written from: apart from every request's own (and a
# session turn's, 2⁴⁰ on), so no input of one request is another's text.
_INPUT_IDS = 1 << 44
_PER_REQUEST = 2048  # spec.MAX_INPUTS: a request's inputs take ids of their own


class EmbeddingAttachment:
    """The slice's part of a request (loadgen.features.slice.Attaches)."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        return frozenset(name for name, workload in classes.items() if SPEC.of(workload) is not None)

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        spec = SPEC.of(workload)
        assert spec is not None  # senders: only classes with the key
        first = _INPUT_IDS + asking.request_id * _PER_REQUEST
        more = [prompt_text(asking.prompt_tokens, first + k) for k in range(1, max(asking.drawn, 1))]
        return Attached(items=more, embedding=EmbeddingAsk(spec.encoding_format, spec.dimensions))

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> Mapping[str, ExtraValue]:
        return {}  # the inputs sent are the core's `items`, for any API of items


EMBEDDING_ATTACHMENT = EmbeddingAttachment()
