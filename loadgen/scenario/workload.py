"""What each request asks for: one workload, or a mix of named classes drawn by weight.

`workload:` in a scenario is either one mapping (the class "default") or a list of classes, each
with the workload keys plus `class` (its name) and `weight`. A class may take its prompts from a
`dataset:` (JSONL, one `{"prompt": "..."}` or `{"messages": [...]}` a line), read and checked when
the scenario is validated; an optional `tokenizer:` (a local Hugging Face tokenizer.json) counts
their tokens on the client, for servers that send no `usage`; with or without a dataset it also
re-counts each answer's text after the run (report.json's `metrics.token_counts`). A ShareGPT
file (a JSON array, or JSONL of `{"conversations": [...]}`) is recognised by its shape
(loadgen/inputs/sharegpt.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

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
    create_model,
    model_validator,
)

from kernel.strict import StrictModel
from kernel.units import PositiveDuration, Size
from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.inputs.datasets import (
    DATASET_MAX_LINES,
    DatasetError,
    count_tokens,
    read_dataset,
    token_counter,
)
from loadgen.inputs.files import field_error, resolve, resolve_tokenizer
from loadgen.inputs.sharegpt import ShareGPTError, count_words, looks_like_sharegpt, read_sharegpt
from loadgen.scenario.lengths import MAX_TOKENS as MAX_TOKENS  # re-exported: the length models
from loadgen.scenario.lengths import FixedLength as FixedLength
from loadgen.scenario.lengths import Length as Length
from loadgen.scenario.lengths import LognormalLength as LognormalLength
from loadgen.scenario.lengths import NormalLength as NormalLength
from loadgen.scenario.lengths import UniformLength as UniformLength
from loadgen.scenario.slice_keys import built_specs
from loadgen.wire.apis import ApiName, lacking, wire_api

DEFAULT_CLASS = "default"
# ---- workloads ---------------------------------------------------------------------------------


_DEFAULT_PROMPT_TOKENS = FixedLength(kind="fixed", value=128)


class WorkloadCore(StrictModel):
    """The workload's own keys; Workload adds the feature slices' (loadgen.scenario.slice_keys)."""

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
    # A local tokenizer.json (or a directory with one): counts a dataset's prompts, and after the
    # run re-counts each answer's text beside the server's usage and the stream's chunks.
    tokenizer: str | None = None
    _entries: tuple[DatasetEntry, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _read_dataset(
        cls, data: Any, handler: ModelWrapValidatorHandler[WorkloadCore], info: ValidationInfo
    ) -> WorkloadCore:
        if isinstance(data, WorkloadCore):
            return handler(data)  # already validated (its dataset read)
        workload = handler(data)
        if workload.dataset is None:
            if workload.tokenizer is None:
                return workload
            # No prompts to count: it re-counts the answers after the run (token counts).
            answers = str(resolve_tokenizer(workload.tokenizer, info))
            try:
                token_counter(Path(answers))
            except DatasetError as exc:
                raise field_error("tokenizer", str(exc), workload.tokenizer) from None
            return workload.model_copy(update={"tokenizer": answers})
        # (a written-back scenario carries the default prompt_tokens beside its dataset: allowed)
        if workload.prompt_tokens != _DEFAULT_PROMPT_TOKENS:
            raise field_error("dataset", "give dataset: or prompt_tokens:, not both", workload.dataset)
        path = resolve(workload.dataset, info, "dataset")
        if _is_sharegpt(path):
            return _read_sharegpt(workload, path, info)
        try:
            entries = read_dataset(path, workload.api, lacking(workload.api))
        except DatasetError as exc:
            raise field_error("dataset", str(exc), workload.dataset) from None
        tokenizer = None
        if workload.tokenizer is not None:
            tokenizer = str(resolve_tokenizer(workload.tokenizer, info))
            try:
                entries = count_tokens(entries, Path(tokenizer))
            except DatasetError as exc:
                raise field_error("tokenizer", str(exc), workload.tokenizer) from None
        loaded = workload.model_copy(update={"dataset": str(path), "tokenizer": tokenizer})
        loaded._entries = tuple(entries)
        return loaded

    @model_validator(mode="after")
    def _items_answer_whole(self) -> WorkloadCore:
        """An API of items (embeddings) answers in one body: its requests are not streamed, so
        `stream` defaults to false for it, and true is refused."""
        if wire_api(self.api).metrics != "latency" or not self.stream:
            return self
        if "stream" in self.model_fields_set:
            message = f"api: {self.api} answers in one body, not a stream: leave stream: out (or false)"
            raise field_error("stream", message, True)
        object.__setattr__(self, "stream", False)
        return self

    @model_validator(mode="after")
    def _slices_fit(self) -> WorkloadCore:
        for spec in _SLICE_KEYS:
            spec.model().fits(self, spec.of(self))
        return self

    @property
    def entries(self) -> tuple[DatasetEntry, ...]:
        """The dataset's prompts (empty without a dataset)."""
        return self._entries

    @property
    def conversations(self) -> bool:
        """Whether the dataset is ShareGPT conversations (a session replays one)."""
        return bool(self._entries) and self._entries[0].later is not None


_SLICE_KEYS = built_specs()


def _workload_model() -> type[WorkloadCore]:
    """WorkloadCore with each slice's key after the core's, in SLICES' order (optional, None:
    not given), as the YAML, the JSON Schema and the validation see it."""
    keys: dict[str, Any] = {spec.key: (spec.model() | None, None) for spec in _SLICE_KEYS}
    return create_model("Workload", __base__=WorkloadCore, __module__=__name__, **keys)


if TYPE_CHECKING:  # to the type checker a workload is its core; a slice reads its key with SpecField.of

    class Workload(WorkloadCore):
        pass

else:
    Workload = _workload_model()


def _is_sharegpt(path: Path) -> bool:
    try:
        return looks_like_sharegpt(path)
    except (OSError, UnicodeDecodeError):
        return False  # the plain reader says what is wrong


def _read_sharegpt(workload: WorkloadCore, path: Path, info: ValidationInfo) -> WorkloadCore:
    """`workload` with a ShareGPT dataset's conversations as its entries."""
    count: Callable[[list[str]], list[int]] = count_words
    tokenizer = None
    if workload.tokenizer is not None:
        tokenizer = str(resolve_tokenizer(workload.tokenizer, info))
        try:
            count = token_counter(Path(tokenizer))
        except DatasetError as exc:
            raise field_error("tokenizer", str(exc), workload.tokenizer) from None
    try:
        entries = read_sharegpt(path, lacking(workload.api), count, limit=DATASET_MAX_LINES)
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


def each_class(workload: Workload, change: Callable[[Workload], Workload]) -> Workload:
    """`workload` with each of its classes changed by `change` (a single workload: itself); the
    same object where no class changed."""
    if not isinstance(workload, WorkloadMix):
        return change(workload)
    changed = [change(each) for each in workload.classes]
    if all(new is old for new, old in zip(changed, workload.classes, strict=True)):
        return workload
    return _mix([cast(WorkloadClass, each) for each in changed])


def workload_classes(workload: Workload) -> list[tuple[str, float, Workload]]:
    """(name, weight, workload) of every class; a single workload is the class "default"."""
    if isinstance(workload, WorkloadMix):
        return [(c.name, c.weight, c) for c in workload.classes]
    return [(DEFAULT_CLASS, 1.0, workload)]
