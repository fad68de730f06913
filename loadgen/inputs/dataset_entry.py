"""One line of a prompt dataset, as the readers (JSONL, ShareGPT) give it to the workload."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgen.inputs.dataset_images import content_text

# A chat message as a dataset line writes it, sent as given: free-form JSON (the readers check
# only its content, loadgen.inputs.dataset_images.content_images).
GivenMessage = Mapping[str, Any]


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset line: a prompt, or chat messages sent as given."""

    prompt: str | None
    messages: tuple[GivenMessage, ...] | None
    tokens: int | None  # counted by the client's tokenizer; None without one
    # A ShareGPT conversation's: its first gpt reply's length (max_tokens; None: the class's
    # output_tokens), and its later human messages as (text, length, its reply's length or None).
    output_tokens: int | None = None
    later: tuple[tuple[str, int, int | None], ...] | None = None  # None: not a conversation
    # Images (loadgen.inputs.dataset_images): files beside the dataset sent with its first user
    # message, and the image parts its messages carry as written.
    images: tuple[str, ...] = ()
    image_parts: int = 0

    @property
    def text(self) -> str:
        """The prompt, or the messages' contents one a line (what a tokenizer counts)."""
        if self.prompt is not None:
            return self.prompt
        return "\n".join(content_text(message["content"]) for message in self.messages or ())
