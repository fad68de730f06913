"""What each request asks for: one workload, or a mix of named classes drawn by weight.

`workload:` in a scenario is either one mapping (the class "default") or a list of classes, each
with the workload keys plus `class` (its name) and `weight`. A class may take its prompts from a
`dataset:` (JSONL, one `{"prompt": "..."}` or `{"messages": [...]}` a line), read and checked when
the scenario is validated; an optional `tokenizer:` (a local Hugging Face tokenizer.json) counts
their tokens on the client, for servers that send no `usage`. A ShareGPT file (a JSON array, or
JSONL of `{"conversations": [...]}`) is recognised by its shape (loadgen/inputs/sharegpt.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationInfo,
    WrapSerializer,
    model_validator,
)

from kernel.strict import StrictModel
from kernel.units import PositiveDuration, Size
from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.inputs.dataset_images import content_images, named_images, without_placeholders
from loadgen.inputs.files import field_error, resolve
from loadgen.inputs.sharegpt import ShareGPTError, count_words, looks_like_sharegpt, read_sharegpt
from loadgen.scenario.adapters import AdaptersSpec
from loadgen.scenario.cancel import CancelSpec
from loadgen.scenario.images import ImagesSpec
from loadgen.scenario.lengths import MAX_TOKENS as MAX_TOKENS  # re-exported: the length models
from loadgen.scenario.lengths import FixedLength as FixedLength
from loadgen.scenario.lengths import Length as Length
from loadgen.scenario.lengths import LognormalLength as LognormalLength
from loadgen.scenario.lengths import NormalLength as NormalLength
from loadgen.scenario.lengths import UniformLength as UniformLength
from loadgen.scenario.prefix import PrefixSpec
from loadgen.scenario.reasoning import ReasoningSpec
from loadgen.scenario.sessions import SessionsSpec
from loadgen.scenario.tools import ToolsSpec
from loadgen.wire.apis import ApiName, apis_carrying, carries

DEFAULT_CLASS = "default"
DATASET_MAX_LINES = 1_000_000

# ---- datasets ----------------------------------------------------------------------------------


class DatasetError(ValueError):
    pass


def read_dataset(path: Path, api: str) -> list[DatasetEntry]:
    """Parse a JSONL dataset; raise DatasetError naming the file and line of the first problem."""
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
            entries.append(_entry(line, api, path.parent))
        except DatasetError as exc:
            raise DatasetError(f"dataset {path.name}:{number}: {exc}") from None
    if not entries:
        raise DatasetError(f"dataset {path.name}: no prompts (one JSON object a line)")
    return entries


def _entry(line: str, api: str, folder: Path) -> DatasetEntry:
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
    if images and not carries(api, "content_parts"):
        needs = apis_carrying("content_parts")
        raise DatasetError(f'"image" needs api: {needs} (images are content parts of a chat message)')
    if "prompt" in data:
        if not isinstance(data["prompt"], str) or not data["prompt"].strip():
            raise DatasetError('"prompt" must be a non-empty string')
        prompt = without_placeholders(data["prompt"]) if images else data["prompt"]
        return DatasetEntry(prompt=prompt, messages=None, tokens=None, images=images)
    messages = data["messages"]
    if not carries(api, "messages"):
        raise DatasetError(f'"messages" needs api: {apis_carrying("messages")} (api: {api} takes a "prompt")')
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
    """Counts texts' tokens with a local tokenizer.json; DatasetError when it cannot load."""
    from tokenizers import Tokenizer  # only a scenario with `tokenizer:` needs it

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


# ---- workloads ---------------------------------------------------------------------------------


_DEFAULT_PROMPT_TOKENS = FixedLength(kind="fixed", value=128)


class Workload(StrictModel):
    api: ApiName = "chat"
    stream: bool = True
    prompt_tokens: Length = _DEFAULT_PROMPT_TOKENS
    output_tokens: Length = FixedLength(kind="fixed", value=64)
    ignore_eos: bool = True
    # Longest a single request may take before it is recorded as a timeout.
    request_timeout: PositiveDuration = 300.0
    # Longest SSE line (or error body) read from a response: beyond it the request fails as
    # `line too long` and its connection is dropped, so one huge line cannot tie up the client.
    max_line: Annotated[Size, Field(gt=0)] = 1_048_576
    # Prompts from a JSONL file instead of prompt_tokens (relative: from the scenario's folder).
    dataset: str | None = None
    tokenizer: str | None = None  # a local tokenizer.json counting the dataset's prompts
    # A share of requests the client cancels mid-answer (loadgen/scenario/cancel.py).
    cancel: CancelSpec | None = None
    # Multi-turn chat sessions: each arrival starts one (loadgen/scenario/sessions.py).
    sessions: SessionsSpec | None = None
    # A share of requests starts with one of a few shared prefixes (loadgen/scenario/prefix.py).
    prefix: PrefixSpec | None = None
    # Reasoning streams: how inline thinking is found, and a reasoning length to ask for
    # (loadgen/scenario/reasoning.py).
    reasoning: ReasoningSpec | None = None
    # Tools offered with every request (loadgen/scenario/tools.py).
    tools: ToolsSpec | None = None
    # Each request names one of several LoRA adapters as its model (loadgen/scenario/adapters.py).
    adapters: AdaptersSpec | None = None
    # Chat requests carry images (loadgen/scenario/images.py).
    images: ImagesSpec | None = None
    _entries: tuple[DatasetEntry, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _read_dataset(
        cls, data: Any, handler: ModelWrapValidatorHandler[Workload], info: ValidationInfo
    ) -> Workload:
        if isinstance(data, Workload):
            return handler(data)  # already validated (its dataset read)
        workload = handler(data)
        if workload.dataset is None:
            if workload.tokenizer is not None:
                raise field_error("tokenizer", "tokenizer: counts a dataset's prompts; give dataset:", None)
            return workload
        # (a written-back scenario carries the default prompt_tokens beside its dataset: allowed)
        if workload.prompt_tokens != _DEFAULT_PROMPT_TOKENS:
            raise field_error("dataset", "give dataset: or prompt_tokens:, not both", workload.dataset)
        path = resolve(workload.dataset, info, "dataset")
        if _is_sharegpt(path):
            return _read_sharegpt(workload, path, info)
        try:
            entries = read_dataset(path, workload.api)
        except DatasetError as exc:
            raise field_error("dataset", str(exc), workload.dataset) from None
        tokenizer = None
        if workload.tokenizer is not None:
            tokenizer = str(resolve(workload.tokenizer, info, "tokenizer"))
            try:
                entries = count_tokens(entries, Path(tokenizer))
            except DatasetError as exc:
                raise field_error("tokenizer", str(exc), workload.tokenizer) from None
        loaded = workload.model_copy(update={"dataset": str(path), "tokenizer": tokenizer})
        loaded._entries = tuple(entries)
        return loaded

    @model_validator(mode="after")
    def _cancel_tokens_need_a_stream(self) -> Workload:
        if self.cancel is not None and self.cancel.after.tokens is not None and not self.stream:
            message = "cancelling after tokens needs stream: true (give after: {time: ...} instead)"
            raise field_error(("cancel", "after", "tokens"), message, None)
        return self

    @model_validator(mode="after")
    def _sessions_need_chat(self) -> Workload:
        if self.sessions is None:
            return self
        if not carries(self.api, "messages"):
            message = f"sessions need api: {apis_carrying('messages')} (a history is a list of messages)"
            raise field_error("sessions", message, None)
        if self.dataset is not None and not self.conversations:
            message = "sessions send prompt_tokens words or replay a ShareGPT dataset: give no other dataset:"
            raise field_error("sessions", message, None)
        if self.sessions.turns is None and not self.conversations:
            message = "give turns: (only a ShareGPT dataset gives each session its turns)"
            raise field_error(("sessions", "turns"), message, None)
        return self

    @model_validator(mode="after")
    def _prefix_needs_synthetic_prompts(self) -> Workload:
        if self.prefix is not None and self.dataset is not None:
            message = "prefix: goes before synthetic prompts (prompt_tokens:); a dataset's are sent as given"
            raise field_error("prefix", message, None)
        return self

    @model_validator(mode="after")
    def _reasoning_fields_need_chat(self) -> Workload:
        if (
            self.reasoning is not None
            and self.api != "chat"
            and self.reasoning.format not in ("auto", "think_tags")
        ):
            fmt = self.reasoning.format
            message = f"format {fmt} is a chat delta's field: with api: completions give think_tags"
            raise field_error(("reasoning", "format"), message, None)
        return self

    @model_validator(mode="after")
    def _tools_need_chat(self) -> Workload:
        if self.tools is not None and not carries(self.api, "tools"):
            message = f"tools need api: {apis_carrying('tools')} (api: {self.api} cannot call one)"
            raise field_error("tools", message, None)
        if self.sessions is not None and self.sessions.agent is not None and self.tools is None:
            message = "an agent loop answers tool calls: give workload.tools"
            raise field_error(("sessions", "agent"), message, None)
        return self

    @model_validator(mode="after")
    def _images_need_chat(self) -> Workload:
        if self.images is None:
            return self
        if not carries(self.api, "content_parts"):
            needs = apis_carrying("content_parts")
            message = f"images need api: {needs} (they are content parts of a chat message)"
            raise field_error("images", message, None)
        if self.sessions is not None:
            message = "images are not sent with sessions: (a history would send them again each turn)"
            raise field_error("images", message, None)
        return self

    @property
    def entries(self) -> tuple[DatasetEntry, ...]:
        """The dataset's prompts (empty without a dataset)."""
        return self._entries

    @property
    def conversations(self) -> bool:
        """Whether the dataset is ShareGPT conversations (a session replays one)."""
        return bool(self._entries) and self._entries[0].later is not None


def _is_sharegpt(path: Path) -> bool:
    try:
        return looks_like_sharegpt(path)
    except (OSError, UnicodeDecodeError):
        return False  # the plain reader says what is wrong


def _read_sharegpt(workload: Workload, path: Path, info: ValidationInfo) -> Workload:
    """`workload` with a ShareGPT dataset's conversations as its entries."""
    count: Callable[[list[str]], list[int]] = count_words
    tokenizer = None
    if workload.tokenizer is not None:
        tokenizer = str(resolve(workload.tokenizer, info, "tokenizer"))
        try:
            count = token_counter(Path(tokenizer))
        except DatasetError as exc:
            raise field_error("tokenizer", str(exc), workload.tokenizer) from None
    try:
        entries = read_sharegpt(path, workload.api, count, limit=DATASET_MAX_LINES)
    except (ShareGPTError, OSError, UnicodeDecodeError) as exc:
        raise field_error("dataset", f"ShareGPT dataset {path.name}: {exc}", workload.dataset) from None
    loaded = workload.model_copy(update={"dataset": str(path), "tokenizer": tokenizer})
    loaded._entries = tuple(entries)
    return loaded


class WorkloadClass(Workload):
    """One class of a mix: a workload with a name and a weight (its share of the requests)."""

    name: str = Field(alias="class", pattern=r"^[a-z0-9_-]+$", max_length=100)
    weight: float = Field(default=1.0, gt=0, le=1e9)  # relative; bounded so their sum stays finite


class WorkloadMix(Workload):
    """A list of classes, standing in where one Workload is expected (the start-up probe, the
    drain timeout): the first class's settings with the longest request_timeout of all."""

    _classes: tuple[WorkloadClass, ...] = PrivateAttr(default=())

    @property
    def classes(self) -> tuple[WorkloadClass, ...]:
        return self._classes


def _mix(classes: list[WorkloadClass]) -> WorkloadMix:
    if not classes:
        raise ValueError("give at least one class")
    names = [workload_class.name for workload_class in classes]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"class names must be unique; repeated: {', '.join(repeated)}")
    first = classes[0]
    fields = {name: getattr(first, name) for name in Workload.model_fields}
    fields["request_timeout"] = max(workload_class.request_timeout for workload_class in classes)
    mix = WorkloadMix.model_construct(**fields)
    mix._entries = first.entries
    mix._classes = tuple(classes)
    return mix


def _dump(value: Any, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
    """A mix is written back as its list of classes (a run folder's scenario.yaml reloads)."""
    if isinstance(value, WorkloadMix):
        mode = "json" if info.mode_is_json() else "python"
        return [c.model_dump(mode=mode, by_alias=info.by_alias or False) for c in value.classes]
    return handler(value)


def _shape(value: Any) -> str:
    return WORKLOAD_TAGS[1] if isinstance(value, list) else WORKLOAD_TAGS[0]


# Tags pydantic puts into error paths for the two spellings (the loader skips them).
WORKLOAD_TAGS = ("workload:one", "workload:classes")

if TYPE_CHECKING:  # to the type checker the field is a Workload (a mix is one, see WorkloadMix)
    WorkloadField = Workload
else:
    WorkloadField = Annotated[
        Annotated[Workload, Tag(WORKLOAD_TAGS[0])]
        | Annotated[list[WorkloadClass], AfterValidator(_mix), Tag(WORKLOAD_TAGS[1])],
        Discriminator(_shape),
        WrapSerializer(_dump),
    ]


def workload_classes(workload: Workload) -> list[tuple[str, float, Workload]]:
    """(name, weight, workload) of every class; a single workload is the class "default"."""
    if isinstance(workload, WorkloadMix):
        return [(c.name, c.weight, c) for c in workload.classes]
    return [(DEFAULT_CLASS, 1.0, workload)]
