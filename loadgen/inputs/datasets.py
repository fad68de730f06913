"""A workload's `dataset:` (JSONL, one `{"prompt": "..."}` or `{"messages": [...]}` a line, images
named by a line or carried by its messages: loadgen.inputs.dataset_images), read and checked when
the scenario is validated, and a local tokenizer.json counting its prompts' tokens."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal, TypeAlias

from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.inputs.dataset_images import content_images, named_images, without_placeholders

# The parts of a request a dataset line may need its API to carry (as loadgen.wire.apis names them).
DatasetPart: TypeAlias = Literal["messages", "content_parts"]
Lacking: TypeAlias = Callable[[DatasetPart], "str | None"]

DATASET_MAX_LINES = 1_000_000


class DatasetError(ValueError):
    pass


def read_dataset(path: Path, api: str, lacking: Lacking) -> list[DatasetEntry]:
    """Parse a JSONL dataset for `api`; raise DatasetError naming the file and line of the first
    problem. `lacking(part)`: None when the API carries that part of a request (`messages`,
    `content_parts`), else the APIs that do (the wire's knowledge, loadgen.wire.apis)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"dataset {path}: cannot read: {exc}") from None
    entries: list[DatasetEntry] = []
    for number, line in enumerate(lines[: DATASET_MAX_LINES + 1], start=1):
        if not line.strip():
            continue
        if number > DATASET_MAX_LINES:
            raise DatasetError(f"dataset {path.name}: more than {DATASET_MAX_LINES} lines")
        try:
            entries.append(_entry(line, api, lacking, path.parent))
        except DatasetError as exc:
            raise DatasetError(f"dataset {path.name}:{number}: {exc}") from None
    if not entries:
        raise DatasetError(f"dataset {path.name}: no prompts (one JSON object a line)")
    return entries


def _entry(line: str, api: str, lacking: Lacking, folder: Path) -> DatasetEntry:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or ("prompt" in data) == ("messages" in data):
        raise DatasetError('expected an object with one of "prompt" or "messages"')
    try:
        images = named_images(data, folder)
    except ValueError as exc:
        raise DatasetError(str(exc)) from None
    needs = lacking("content_parts")
    if images and needs is not None:
        raise DatasetError(f'"image" needs api: {needs} (images are content parts of a chat message)')
    if "prompt" in data:
        if not isinstance(data["prompt"], str) or not data["prompt"].strip():
            raise DatasetError('"prompt" must be a non-empty string')
        prompt = without_placeholders(data["prompt"]) if images else data["prompt"]
        return DatasetEntry(prompt=prompt, messages=None, tokens=None, images=images)
    messages = data["messages"]
    needs = lacking("messages")
    if needs is not None:
        raise DatasetError(f'"messages" needs api: {needs} (api: {api} takes a "prompt")')
    if not isinstance(messages, list) or not messages:
        raise DatasetError('"messages" must be a non-empty list')
    parts = 0
    for index, message in enumerate(messages):
        if not (isinstance(message, dict) and isinstance(message.get("role"), str) and "content" in message):
            raise DatasetError(f'messages[{index}] must be an object with string "role" and "content"')
        try:
            parts += content_images(message["content"], f"messages[{index}]")
        except ValueError as exc:
            raise DatasetError(str(exc)) from None
    return DatasetEntry(prompt=None, messages=tuple(messages), tokens=None, images=images, image_parts=parts)


def token_counter(tokenizer_path: Path) -> Callable[[list[str]], list[int]]:
    """Counts texts' tokens with a local tokenizer.json (or a model directory holding one);
    DatasetError when it cannot load."""
    from tokenizers import Tokenizer  # only a scenario with `tokenizer:` needs it

    if tokenizer_path.is_dir():  # a model's directory, as Hugging Face ships it
        tokenizer_path = tokenizer_path / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:  # the library raises plain Exception for a missing or bad file
        raise DatasetError(f"tokenizer {tokenizer_path}: cannot load: {exc}") from None
    return lambda texts: [len(encoded.ids) for encoded in tokenizer.encode_batch(texts)]


def count_tokens(entries: list[DatasetEntry], tokenizer_path: Path) -> list[DatasetEntry]:
    """The entries with `tokens` counted by a local tokenizer.json (no chat template: the
    messages' contents only, so a chat prompt's count is a little under the server's)."""
    counts = token_counter(tokenizer_path)([e.text for e in entries])
    return [replace(e, tokens=n) for e, n in zip(entries, counts, strict=True)]
