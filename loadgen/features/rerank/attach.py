"""A rerank request's documents (`workload.rerank`): as many as it drew, each of a length drawn
from `document_tokens` with the request's own seed, and the `top_n` asked for."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.rerank.draws import documents_of
from loadgen.features.rerank.key import SPEC
from loadgen.features.slice import Asking, Attached
from loadgen.inputs.vocabulary import prompt_text
from loadgen.scenario.distributions import sample
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult
from loadgen.wire.call import RerankAsk

# The ids documents are written from: apart from every request's own (a session turn's, 2⁴⁰ on;
# an embeddings batch's, 2⁴⁴ on), so no document is another request's text.
_DOCUMENT_IDS = 1 << 45
_PER_REQUEST = 1024  # ≥ spec.MAX_DOCUMENTS


class RerankAttachment:
    """The slice's part of a request (loadgen.features.slice.Attaches)."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        return frozenset(name for name, workload in classes.items() if SPEC.of(workload) is not None)

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        spec = SPEC.of(workload)
        assert spec is not None  # senders: only classes with the key
        count, seed = documents_of(asking.drawn)
        lengths = sample(spec.document_tokens, count, np.random.default_rng(seed)).tolist()
        first = _DOCUMENT_IDS + asking.request_id * _PER_REQUEST
        documents = [prompt_text(int(length), first + k) for k, length in enumerate(lengths)]
        return Attached(items=documents, rerank=RerankAsk(spec.top_n))

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> Mapping[str, ExtraValue]:
        return {}  # the documents sent are the core's `items`, for any API of items


RERANK_ATTACHMENT = RerankAttachment()
