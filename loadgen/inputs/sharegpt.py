"""ShareGPT conversations as a `workload.dataset`: detected by their shape, read into entries.

A ShareGPT file is a JSON array, or JSONL (one object a line), of
`{"id": ..., "conversations": [{"from": "human" | "gpt" | "system", "value": "..."}, ...]}`
("user"/"assistant" are read as "human"/"gpt"). It is recognised by its content: a JSON array, or
a JSONL file whose first object has `conversations`.

- Without sessions a request sends a conversation's first human message (after its system
  message, if any, with api: chat) and asks for as many tokens as the first gpt reply after it
  had (as vLLM's benchmark does): its word count, or its token count with `tokenizer:`. A
  conversation without such a reply takes the class's `output_tokens`.
- With `workload.sessions` a session replays one conversation: its human messages are the user
  turns (each sent after the server's ACTUAL answers to the earlier ones, never the recorded gpt
  replies), each asking for its own gpt reply's length; its turns are its human messages
  (`sessions.turns`, if given, caps them).
- Conversations without a human message are skipped; a file with none left is an error.
- A conversation's `"image"` (ShareGPT-4V, LLaVA: a file or a list of files beside the dataset)
  is sent with its first human message (loadgen.inputs.dataset_images).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.inputs.dataset_images import named_images, without_placeholders
from loadgen.inputs.datasets import Lacking

# Counts each text's tokens: words without a tokenizer (what the simulated server counts).
Counter = Callable[[list[str]], list[int]]

_ROLES = {
    "human": "human",
    "user": "human",
    "gpt": "gpt",
    "assistant": "gpt",
    "chatgpt": "gpt",
    "system": "system",
}


class ShareGPTError(ValueError):
    """A file that cannot be read as ShareGPT; the message names where."""


def count_words(texts: list[str]) -> list[int]:
    return [len(text.split()) for text in texts]


def looks_like_sharegpt(path: Path) -> bool:
    """Whether `path` holds ShareGPT: a JSON array, or JSONL whose first object has `conversations`."""
    with path.open(encoding="utf-8-sig") as handle:
        for line in handle:
            text = line.strip()
            if not text:
                continue
            if text.startswith("["):
                return True
            try:
                first = json.loads(text)
            except json.JSONDecodeError:
                return False  # the plain reader says what is wrong
            return isinstance(first, dict) and "conversations" in first
    return False


def _items(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, object) of every conversation: 'entry N' of an array, 'line N' of JSONL."""
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ShareGPTError(f"line {exc.lineno}: not JSON: {exc.msg}") from None
        for index, item in enumerate(data):
            yield f"entry {index}", item
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise ShareGPTError(f"line {number}: not JSON: {exc.msg}") from None


Turn = tuple[str, str | None]  # (a human message, the gpt reply after it, if any)


def _conversation(item: Any) -> tuple[str | None, list[Turn]]:
    """(system message, turns) of one conversation object."""
    if not isinstance(item, dict) or not isinstance(item.get("conversations"), list):
        raise ShareGPTError('expected an object with a "conversations" list')
    system: str | None = None
    turns: list[Turn] = []
    for index, message in enumerate(item["conversations"]):
        if not isinstance(message, dict) or not isinstance(message.get("value"), str):
            raise ShareGPTError(f'conversations[{index}] must be an object with a string "value"')
        role = _ROLES.get(str(message.get("from")))
        if role is None:
            known = ", ".join(sorted(_ROLES))
            raise ShareGPTError(
                f'conversations[{index}]: "from" {message.get("from")!r} is not one of {known}'
            )
        value = message["value"]
        if role == "system":
            system = system if system is not None or turns else value  # only one before the first turn
        elif role == "human":
            if value.strip():
                turns.append((value, None))
        elif turns and turns[-1][1] is None:  # the reply to the last human message
            turns[-1] = (turns[-1][0], value)
    return system, turns


def read_sharegpt(
    path: Path,
    lacking: Lacking,
    count: Counter = count_words,
    limit: int | None = None,
) -> list[DatasetEntry]:
    """Every conversation with a human message as a DatasetEntry;
    ShareGPTError names the entry or line of the first problem. `lacking`: what the workload's
    API cannot carry (loadgen.inputs.datasets.Lacking: messages for a system prompt, images)."""
    entries: list[DatasetEntry] = []
    for where, item in _items(path):
        if limit is not None and len(entries) >= limit:
            raise ShareGPTError(f"more than {limit} conversations")
        try:
            system, turns = _conversation(item)
            images = named_images(item, path.parent)
        except (ShareGPTError, ValueError) as exc:
            raise ShareGPTError(f"{where}: {exc}") from None
        needs = lacking("content_parts")
        if images and needs is not None:
            raise ShareGPTError(
                f'{where}: "image" needs api: {needs} (images are content parts of a chat message)'
            )
        if not turns:
            continue
        humans = [human for human, _ in turns]
        if images:  # the parts say where the images are
            humans[0] = without_placeholders(humans[0]) or humans[0]
        replies = [reply or "" for _, reply in turns]
        human_counts, reply_counts = count(humans), count(replies)
        outputs = [
            n if reply is not None and n > 0 else None
            for (_, reply), n in zip(turns, reply_counts, strict=True)
        ]
        messages = None
        if system is not None and lacking("messages") is None:
            messages = ({"role": "system", "content": system}, {"role": "user", "content": humans[0]})
        first_tokens = human_counts[0] if count is not count_words else None
        if messages is not None and first_tokens is not None:
            first_tokens += count([system or ""])[0]
        entries.append(
            DatasetEntry(
                prompt=humans[0] if messages is None else None,
                messages=messages,
                tokens=first_tokens,
                output_tokens=outputs[0],
                later=tuple(
                    (text, max(1, n), out)
                    for text, n, out in zip(humans[1:], human_counts[1:], outputs[1:], strict=True)
                ),
                images=images,
            )
        )
    if not entries:
        raise ShareGPTError("no conversation with a human message")
    return entries
