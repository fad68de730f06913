"""What the slices attached to one request ask of its call and of the reader of its answer,
gathered: the core builds the call of what every request has and hands it over, and never
names what a feature asks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from loadgen.features.slice import Attached
from loadgen.wire.answer import AnswerReader
from loadgen.wire.apis import WireApi
from loadgen.wire.call import (
    AudioClip,
    Call,
    ContentPart,
    EmbeddingAsk,
    ReasoningAsk,
    RerankAsk,
    TensorsAsk,
    ToolsAsk,
    WireRequest,
)


@dataclass(frozen=True, slots=True)
class Asks:
    budget: int = 0  # output tokens the slices add to the request's own
    parts: Sequence[ContentPart] = ()
    reasoning: ReasoningAsk | None = None
    tools: ToolsAsk | None = None
    think: str = "auto"  # how the reader finds inline thinking
    model: str | None = None  # the model the call names (None: the endpoint's)
    items: Sequence[str] = ()  # texts after the prompt (an API of items' batch or documents)
    embedding: EmbeddingAsk | None = None
    rerank: RerankAsk | None = None
    audio: AudioClip | None = None
    tensors: TensorsAsk | None = None

    def onto(self, call: Call) -> Call:
        """`call` with what the slices ask (the same object when they ask nothing)."""
        if self is NO_ASKS:
            return call
        return replace(
            call,
            max_tokens=call.max_tokens + self.budget,  # servers count a slice's share in the output
            content_parts=self.parts,
            reasoning=self.reasoning,
            tools=self.tools,
            items=self.items,
            embedding=self.embedding,
            rerank=self.rerank,
            audio=self.audio,
            tensors=self.tensors,
        )

    def reader(self, api: WireApi, request: WireRequest, keep_text: bool) -> AnswerReader:
        """The reader of the answer to `request` (a tool's calls kept where tools were offered)."""
        return api.reader(
            think=self.think, calls=self.tools is not None, keep_text=keep_text, request=request
        )


NO_ASKS = Asks()


def gather(attached: Sequence[Attached]) -> Asks:
    """The asks of a request's slices' parts (the first of each kind, the budgets summed)."""
    if not attached:
        return NO_ASKS
    return Asks(
        budget=sum(each.budget for each in attached),
        parts=[part for each in attached for part in each.parts],
        reasoning=next((each.reasoning for each in attached if each.reasoning is not None), None),
        tools=next((each.tools for each in attached if each.tools is not None), None),
        think=next((each.think for each in attached if each.think is not None), "auto"),
        model=next((each.model for each in attached if each.model is not None), None),
        items=[item for each in attached for item in each.items],
        embedding=next((each.embedding for each in attached if each.embedding is not None), None),
        rerank=next((each.rerank for each in attached if each.rerank is not None), None),
        audio=next((each.audio for each in attached if each.audio is not None), None),
        tensors=next((each.tensors for each in attached if each.tensors is not None), None),
    )
