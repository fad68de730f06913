"""OpenAI's embeddings wire format (`POST /v1/embeddings`): the request body in, the list out.

As `openai.py`, pure and without I/O. `input` is a text, texts, token ids or lists of them;
`encoding_format` "base64" sends each vector as the base64 of its little-endian float32 bytes
(what the official client asks for by default and decodes itself); `dimensions` keeps the
first that many components and renormalises them (Matryoshka-style truncation).
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from servers.engines.engine import EmbedInput

MAX_INPUTS = 2048  # OpenAI's limit on one request's inputs


class EmbeddingsBody(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str | None = None
    # Token id lists before texts' lists: pydantic tries the union's members left to right.
    input: str | list[int] | list[list[int]] | list[str]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None

    def inputs(self) -> list[EmbedInput]:
        """One entry per vector to answer, in order."""
        data = self.input
        if isinstance(data, str):
            return [data]
        items: list[EmbedInput] = []
        ids: list[int] = []
        for item in data:
            if isinstance(item, int):
                ids.append(item)  # one list of token ids: a single input
            else:
                items.append(item)
        return [ids] if ids else items

    def problem(self, width: int, id_limit: int | None) -> str | None:
        """A well-formed body this server cannot answer (a 400 with this message), or None."""
        items = self.inputs()
        if not items:
            return "input must not be empty"
        if len(items) > MAX_INPUTS:
            return f"input holds {len(items)} items; at most {MAX_INPUTS}"
        for index, item in enumerate(items):
            if len(item) == 0:
                return f"input[{index}] is empty"
            if not isinstance(item, str) and (
                min(item) < 0 or (id_limit is not None and max(item) >= id_limit)
            ):
                return f"input[{index}] holds a token id outside the vocabulary (0 to {(id_limit or 1) - 1})"
        if self.dimensions is not None and self.dimensions > width:
            return f"dimensions is {self.dimensions}, more than this model's {width}"
        return None


def shaped(vector: Sequence[float], dimensions: int | None) -> list[float]:
    """The vector as answered: its first `dimensions` components, unit-norm."""
    kept = list(vector[:dimensions]) if dimensions is not None else list(vector)
    norm = math.sqrt(math.fsum(x * x for x in kept))
    return [x / norm for x in kept] if norm else kept


def encoded(vector: list[float], encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return vector


def embeddings_answer(
    model: str, vectors: Sequence[Sequence[float]], body: EmbeddingsBody, prompt_tokens: int
) -> dict[str, Any]:
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": encoded(shaped(v, body.dimensions), body.encoding_format),
        }
        for i, v in enumerate(vectors)
    ]
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }
