"""`workload.rerank`: the documents of each rerank request (`api: rerank`, which needs it; and
`api: score`, vLLM's score API, which scores every document: no `top_n`).

```yaml
workload:
  api: rerank
  prompt_tokens: {kind: fixed, value: 16}              # the query's length (words ≈ tokens)
  rerank:
    documents: {kind: uniform, min: 8, max: 32}        # documents per query, drawn per request
    document_tokens: {kind: uniform, min: 64, max: 256} # each document's length, drawn per document
    top_n: 5                                           # results asked for (default: every document)
```

Semantics (carried out by the rerank slice, loadgen.features.rerank): each request's document
count, and each document's length, are drawn from the slice's own seeded streams (the rest of the
plan is as without it); each document's text is unique to its request and place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from pydantic import Field

from loadgen.inputs.files import field_error
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.lengths import Length
from loadgen.scenario.slice_model import SliceSpec

QUERY_APIS = ("rerank", "score")  # a query against documents: the rerank API, vLLM's score API
MAX_DOCUMENTS = 1000  # per query: vLLM and the hosted rerankers take about this many

DOCUMENTS = counts("Documents", __name__, 1, MAX_DOCUMENTS, "document count")
FixedDocuments = DOCUMENTS.fixed
UniformDocuments = DOCUMENTS.uniform
NormalDocuments = DOCUMENTS.normal
LognormalDocuments = DOCUMENTS.lognormal

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

    DocumentCount: TypeAlias = Distribution[int]
else:
    DocumentCount = DOCUMENTS.union


class RerankSpec(SliceSpec):
    documents: DocumentCount
    document_tokens: Length
    top_n: int | None = Field(default=None, ge=1, le=MAX_DOCUMENTS)

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        if spec is None:
            if workload.api in QUERY_APIS:
                message = f"api: {workload.api} needs rerank: {{documents: ..., document_tokens: ...}}"
                raise field_error("api", message, workload.api)
            return
        if workload.api not in QUERY_APIS:
            message = f"rerank: needs api: rerank or score (the workload's is {workload.api})"
            raise field_error("rerank", message, None)
        if workload.api == "score" and isinstance(spec, RerankSpec) and spec.top_n is not None:
            message = "top_n does not apply to api: score (every document is scored): use api: rerank"
            raise field_error(("rerank", "top_n"), message, spec.top_n)
