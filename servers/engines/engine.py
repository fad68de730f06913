"""The interface every built-in engine implements behind the one HTTP front.

An engine turns a prompt into a stream of text pieces, one per output token, and may run many
requests at once (continuous batching). The HTTP front never knows how: it calls `generate`,
writes each piece as it arrives, and reads `stats()` and each request's `timing` for /metrics.

A real engine (ONNX Runtime, PyTorch) implements the same four things: a scheduler that admits
queued requests into the running batch, `generate` as an async generator fed by that scheduler,
`ready()` that turns true once weights are loaded, and `stats()` for the gauges.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np

    from servers.engines.tensors import TensorModel

# One input of an embeddings request: a text, or token ids (OpenAI's `input` as [int]).
EmbedInput = str | Sequence[int]


@dataclass
class RequestTiming:
    """Filled in by the engine while it serves one request (loop-clock seconds).

    Mutable on purpose: the front reads it after the first piece to observe queue wait, so the
    engine does not need to know about metrics.
    """

    queue_wait_s: float | None = None  # arrival → admitted into the running batch
    # Prompt tokens the prefix cache held at admission; None: the engine has no prefix cache.
    cached_tokens: int | None = None
    # A LoRA adapter's request: whether the engine had to load the adapter (a miss); None: no adapter.
    adapter_miss: bool | None = None


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    prompt_tokens: int
    max_tokens: int
    ignore_eos: bool = False
    adapter: str | None = None  # the LoRA adapter the request named (None: the base model)
    images: int = 0  # image parts of a chat's messages (counted in prompt_tokens already)
    timing: RequestTiming = field(default_factory=RequestTiming, compare=False)


@dataclass(frozen=True)
class EngineStats:
    """A point-in-time snapshot for the gauges on /metrics."""

    running: int  # requests in the running batch (holding a slot)
    waiting: int  # requests queued for a slot
    slots: int = 0  # batch slots, each with room for one request's KV cache (0: unknown)


class EmbeddingsUnsupported(Exception):
    """This engine's model computes no embeddings (a 400 to the client, with this message)."""


class TranscriptionsUnsupported(Exception):
    """This engine's model is no speech model (a 400 to the client, with this message)."""


class GenerationUnsupported(Exception):
    """This engine's model generates no text: a classic model (a 400 to the client, with this
    message, on /v1/completions, /v1/chat/completions and /v1/responses)."""


# How a streamed transcript is written: OpenAI's typed events, or vLLM's chat-like chunks.
TranscriptFormat = Literal["openai", "vllm"]


class Engine(ABC):
    """One model behind one scheduler. Construct cheaply; heavy loading goes in `start()`."""

    # The width of the vectors `embed` returns; None: the engine serves no embeddings (nor scores).
    embedding_width: int | None = None

    # Prompt tokens each image part of a chat counts as; None: a text-only model, whose front
    # answers a request with images 400 (as vLLM does for a model that takes no images).
    image_tokens: int | None = None

    # The stream format of `/v1/audio/transcriptions` (an engine that transcribes chooses it).
    transcript_format: TranscriptFormat = "openai"

    # A classic model's tensors (servers/engines/tensors.py); None: an LLM, which takes none.
    tensor_model: TensorModel | None = None

    # False for an engine that generates no text (a classic model alone): the front refuses its
    # text routes with a 400 before anything is counted as a generation.
    generates_text: bool = True

    def __init__(self, model_name: str, adapters: Sequence[str] = ()) -> None:
        self.model_name = model_name
        self.adapters = tuple(adapters)  # LoRA adapters served besides the base model, by name

    async def start(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Begin loading (weights, warm-up). Runs as a background task while the server
        already answers, so /health can say 503 until `ready()`; a no-op by default."""

    async def close(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release resources when the server shuts down; a no-op by default."""

    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str:
        """The prompt text for a conversation of (role, content) pairs. By default the contents
        joined by newlines; an engine with a real model renders the model's chat template."""
        return "\n".join(content for _, content in messages)

    @abstractmethod
    def ready(self) -> bool:
        """False while starting up; the front answers 503 on /health and on requests."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens the engine's tokenizer sees in `text` (reported as usage.prompt_tokens)."""

    @abstractmethod
    def stats(self) -> EngineStats: ...

    # A plain `def` returning AsyncGenerator so implementations can be `async def` generators
    # (an abstract `async def` would type as a coroutine, which a generator does not match).
    @abstractmethod
    def generate(self, req: GenerationRequest) -> AsyncGenerator[str, None]:
        """Yield one text piece per output token, at most `req.max_tokens` of them.

        Fewer pieces mean the model stopped (EOS). Cancelling the consumer, or closing the
        generator, must free the request's slot at once: that is how a client disconnect is
        handled. Set `req.timing.queue_wait_s` when the request is admitted.
        """

    def count_input_tokens(self, item: EmbedInput) -> int:
        """The prompt tokens of one embeddings input: a text's as a prompt's, token ids one each."""
        return self.count_tokens(item) if isinstance(item, str) else len(item)

    def token_id_limit(self) -> int | None:
        """Token ids an input may hold are below this (the vocabulary); None: any."""
        return None

    async def embed(self, inputs: Sequence[EmbedInput], timing: RequestTiming) -> list[list[float]]:
        """One pooled vector per input, in order, `embedding_width` floats each (not normalised:
        the front normalises). Sets `timing.queue_wait_s` when the work is admitted."""
        raise EmbeddingsUnsupported(f"the model `{self.model_name}` serves no embeddings")

    async def score(self, pairs: Sequence[tuple[str, str]], timing: RequestTiming) -> list[float]:
        """Each pair's relevance score (its second text's to its first), in order: by default
        the cosine of their pooled embeddings, every distinct text embedded once, in one call."""
        texts = list(dict.fromkeys(text for pair in pairs for text in pair))
        vectors = dict(zip(texts, await self.embed(texts, timing), strict=True))
        return [cosine(vectors[a], vectors[b]) for a, b in pairs]

    def transcribe(self, seconds: float, timing: RequestTiming) -> AsyncGenerator[str, None]:
        """One text piece per word of the transcript of a recording `seconds` long, each as it
        is decoded (as `generate`'s pieces: closing the generator frees the request's slot).
        Sets `timing.queue_wait_s` when the request is admitted."""
        raise TranscriptionsUnsupported(
            f"the model `{self.model_name}` does not transcribe audio (not a speech model)"
        )

    async def infer(self, inputs: Mapping[str, np.ndarray], timing: RequestTiming) -> dict[str, np.ndarray]:
        """A classic model run on one request's batch: `inputs` by name, each an array whose
        first dimension is the batch (checked against `tensor_model` by the front); the outputs
        by name, the same batch first. Sets `timing.queue_wait_s` when the work is admitted."""
        from servers.engines.tensors import TensorsUnsupported  # numpy: not for the simulated LLM's start

        raise TensorsUnsupported(f"the model `{self.model_name}` takes no tensors (not a classic model)")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0
