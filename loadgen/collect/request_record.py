"""One record per request: its fields, each declared once with what it means.

A field's `doc` (FieldDoc, in its metadata) is the one place it is described: the run-folder
page's key table is generated from it (`python -m loadgen.reference`), a line of requests.jsonl
leaves out the `sparse` ones while they are None, and the statistics' columns
(loadgen.collect.columns) read the fields that name a `column` kind without code of their own.
A feature's fields name it (`feature`): the core's are those of every request.
Times are seconds since the run's start on a monotonic clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from loadgen.collect.field_doc import ColumnKind, ExtraValue, FieldDoc, doc
from loadgen.collect.itl_codec import ITL_KEY, LEGACY_KEY, pack_gaps, unpack_gaps
from loadgen.collect.slice_registry import SLICE_FIELDS

__all__ = ["ColumnKind", "ExtraValue", "FieldDoc", "doc"]

# "cancelled": the client closed the stream on purpose (a planned Stop); not a failure.
Status = Literal["ok", "error", "timeout", "cancelled"]
# The statuses of requests that did not fail: any other (an unknown one too) counts as failed.
NOT_FAILED = frozenset({"ok", "cancelled"})
# What went wrong with a status "error" record (None for "ok", "cancelled" and for "timeout",
# whose status says it):
# connection: refused, reset or closed by the server before or while answering;
# http: the server answered with an error (status other than 200, or an error object in the stream);
# protocol: a malformed answer (bad HTTP, an unparseable chunk, a stream that ended before [DONE]);
# line_too_long: a line or body over workload.max_line (the connection was dropped);
# interrupted: the run was stopped mid-request; client: a bug in the load generator;
# wrong_count: an answer of items (embeddings' vectors) held other than the request asked for;
# wrong_shape: a tensor answer (KServe v2) lacked an output, or gave one of another shape.
ErrorKind = Literal[
    "connection", "http", "protocol", "line_too_long", "interrupted", "client", "wrong_count", "wrong_shape"
]
TokensSource = Literal["usage", "chunks"]
# A line of requests.jsonl as read (JSON parsed, not yet checked): the core's keys and the slices'
# (registered at run time, so no TypedDict can list them); RequestRecord.from_dict checks one, and
# the columns read them a key at a time. Free-form by design: the one name for it.
RecordLine = Mapping[str, Any]


# Where set_stream_gaps (loadgen.collect.records) keeps a record's gaps with their `itl_us` string:
# an attribute outside the fields (to_dict, replace and copies leave it out, and then the gaps are
# packed afresh).
PACKED_GAPS = "_packed_itl"


@dataclass
class RequestRecord:
    """A request as it ended; requests.jsonl holds one per line (loadgen.collect.records)."""

    id: int = field(metadata=doc("integer", "the request's number in the schedule", column="count"))
    phase: int = field(
        metadata=doc(
            "integer",
            "its traffic phase (a search: its level run), as in report.json's `phases[].index`",
            column="count",
        )
    )
    scheduled_s: float = field(metadata=doc("number", "when it was due to leave", column="number"))
    sent_s: float | None = field(
        default=None, metadata=doc("number or null", "when it left (null: it never left)", column="number")
    )
    first_token_s: float | None = field(
        default=None,
        metadata=doc(
            "number or null",
            "when the first token of any kind arrived: reasoning, answer or tool-call arguments (null: "
            "none, or not streamed)",
            column="number",
        ),
    )
    done_s: float | None = field(
        default=None, metadata=doc("number or null", "when it ended, whatever the outcome", column="number")
    )
    prompt_tokens: int | None = field(
        default=None,
        metadata=doc(
            "integer or null",
            "from the server's `usage`, else the client's `tokenizer` count (datasets), else null",
            column="number",
        ),
    )
    output_tokens: int = field(default=0, metadata=doc("integer", "tokens received", column="count"))
    tokens_source: TokensSource = field(
        default="chunks",
        metadata=doc(
            "`usage` or `chunks`",
            "whether `output_tokens` is the server's `usage` or a count of stream chunks",
        ),
    )
    prompt_asked: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "the prompt tokens the plan asked for (`prompt_tokens` drawn, or a dataset row's count), "
            "beside the server's `prompt_tokens`; only with [`workload.tokenizer`](scenario.md#token-counts)",
            feature="tokenizer",
            sparse=True,
            column="number",
        ),
    )
    answer_text: str | None = field(
        default=None,
        metadata=doc(
            "string",
            "the answer's text as streamed (inline thinking left out), re-tokenized after the run "
            "([token counts](scenario.md#token-counts)); only with `workload.tokenizer`",
            feature="tokenizer",
            sparse=True,
        ),
    )
    items: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "an API of items: the inputs ([embeddings](scenario.md#embeddings)) or documents "
            "([rerank](scenario.md#rerank)) it sent; null: a generation API",
            feature="items",  # the APIs of items' (any of them), not every request's
            sparse=True,
            column="tally",
        ),
    )
    itl_ms: list[float] | dict[str, float] = field(
        default_factory=list,
        metadata=doc(
            "string",
            "gaps between token chunks of any kind, in whole µs, packed (see [the "
            'gaps](#the-per-token-gaps)); `""` when there were none',
            key="itl_us",
            also=(
                (
                    "itl_ms",
                    "object, or list of numbers",
                    "instead of `itl_us`: above 4096 gaps a summary `{n, mean, p50, p95, p99, max}` in ms; "
                    "files from before `itl_us` hold the gaps here as a list of ms",
                ),
            ),
        ),
    )
    status: Status = field(
        default="ok",
        metadata=doc(
            "`ok`, `error`, `timeout` or `cancelled`",
            "the outcome; `timeout`: not finished within `workload.request_timeout`; `cancelled`: "
            "closed by the client on purpose ([cancellations](scenario.md#cancellations)), `done_s` "
            "is when, the other fields what it received",
        ),
    )
    error: str | None = field(
        default=None, metadata=doc("string or null", "what went wrong, short, credentials redacted")
    )
    error_kind: ErrorKind | None = field(
        default=None,
        metadata=doc(
            "string or null",
            "for `error`: `connection` (no answer), `http` (an error status or error object), "
            "`protocol` (a malformed answer), `line_too_long`, `interrupted`, `client` (a bug in the "
            "load generator), `wrong_count` (an answer of items, such as embeddings' vectors, held "
            "other than the request asked for), `wrong_shape` (a tensor answer that lacks an output "
            "or gives one of another shape than the model's metadata)",
        ),
    )
    http_status: int | None = field(default=None, metadata=doc("integer or null", "the answer's HTTP status"))
    retry_after_s: float | None = field(
        default=None, metadata=doc("number or null", "a 429 or 503 answer's `Retry-After`, seconds")
    )
    request_class: str = field(
        default="default",
        metadata=doc(
            "string",
            "its [workload class](scenario.md#workload-classes) (`default` with one workload)",
            key="class",
        ),
    )
    warmup: bool = field(
        default=False,
        metadata=doc("boolean", "sent during the warm-up (left out of the statistics)", column="flag"),
    )
    lag_ms: float = field(
        default=0.0,
        metadata=doc(
            "number", "how late it left against its schedule because of the client", column="amount"
        ),
    )
    slot_wait_ms: float = field(
        default=0.0,
        metadata=doc("number", "time spent waiting for a free `max_concurrency` slot", column="amount"),
    )
    level: float | None = field(
        default=None, metadata=doc("number or null", "search runs: the load level it belonged to")
    )
    cached_tokens: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "prompt tokens the server's prefix cache held (its "
            "`usage.prompt_tokens_details.cached_tokens`); null when the server did not say",
            feature="prefix",
            sparse=True,
            column="number",
        ),
    )
    prefix_group: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "the [shared prefix](scenario.md#shared-prefixes) sent with it: its group, "
            "or a trace row's first block id when another row begins with it too; null: none",
            feature="prefix",
            sparse=True,
        ),
    )
    session: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "the [multi-turn session](scenario.md#sessions) it belongs to (its turn 1's `id`); null: none",
            feature="sessions",
            sparse=True,
        ),
    )
    turn: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "its turn in the session, from 1 (turn k ≥ 2 has `id` 2⁴⁰ + session × 1000 + k − 2)",
            feature="sessions",
            sparse=True,
            column="count",
        ),
    )
    session_turns: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "the turns planned for its session (the session completed when that turn was answered)",
            feature="sessions",
            sparse=True,
            column="count",
        ),
    )
    session_start_s: float | None = field(
        default=None,
        metadata=doc(
            "number",
            "its session's turn 1 due time (`scheduled_s`); `session_e2e` counts from it",
            feature="sessions",
            sparse=True,
            column="number",
        ),
    )
    first_answer_s: float | None = field(
        default=None,
        metadata=doc(
            "number",
            "when the first answer token arrived, only where reasoning or a tool call came before it "
            "([reasoning streams](scenario.md#reasoning-streams)); absent where the answer began with "
            "the first token, or where reasoning or a tool call came and no answer did",
            feature="reasoning",  # a label of the run-folder page: set where something came first
            sparse=True,
        ),
    )
    step: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "an [agent loop](scenario.md#agent-loops)'s step in its turn: 0 for the user's message, k "
            "after k tool results",
            feature="agent",
            sparse=True,
            column="count",
        ),
    )
    tool_wait_ms: float | None = field(
        default=None,
        metadata=doc(
            "number",
            "the tool latency waited before this step, ms",
            feature="agent",
            sparse=True,
            column="number",
        ),
    )
    followed: bool | None = field(
        default=None,
        metadata=doc(
            "`true`",
            "another step of the turn followed this answer (it called a tool)",
            feature="agent",
            sparse=True,
            column="flag",
        ),
    )
    replica: int | None = field(
        default=None,
        metadata=doc(
            "integer",
            "a plan's [verification](scenario.md#verify) over several replicas: the replica the "
            "balancer sent it to (1-based; a replacement keeps the slot of the one it replaced)",
            feature="verify",
            sparse=True,
        ),
    )

    # The fields of the feature slices (loadgen.features), by name, as their FieldDocs declare
    # them (register_fields); None while the record has none. A line holds them after the core's.
    extra: dict[str, ExtraValue] | None = None

    def to_dict(self) -> dict[str, Any]:
        # Shallow, by hand: dataclasses.asdict deep-copies the ITL list of every record.
        data = {name: getattr(self, name) for name in FIELD_NAMES}
        data["class"] = data.pop("request_class")
        extra = self.extra or {}
        for name in SLICE_FIELDS:  # every slice's, None where unset, as the core's
            data[name] = extra.get(name)
        return data

    def to_file_dict(self) -> dict[str, Any]:
        """What a line of requests.jsonl holds: to_dict with the gaps packed (`itl_us`)."""
        data = self.to_dict()
        for name, described in SLICE_FIELDS.items():  # a slice's sparse field while None
            if described.sparse and data[name] is None:
                del data[name]
        for name in SPARSE_KEYS:
            if data[name] is None:
                del data[name]
        gaps = data["itl_ms"]
        if isinstance(gaps, list):
            kept = self.__dict__.get(PACKED_GAPS)  # set_stream_gaps's string, if these are its gaps
            packed = kept[1] if kept is not None and kept[0] is gaps else pack_gaps(gaps)
            if packed is not None:  # else off the µs grid: the float list stays, exact
                del data[LEGACY_KEY]
                data[ITL_KEY] = packed
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls._from_own_dict(dict(data))

    @classmethod
    def _from_own_dict(cls, data: dict[str, Any]) -> RequestRecord:
        """From a dict nobody else holds (it is changed): no copy, and no filtering when every
        key is a field, as in the files this version writes (100k records read ~1 s faster)."""
        data["request_class"] = data.pop("class", "default")
        packed = data.pop(ITL_KEY, None)
        if packed is not None:
            data[LEGACY_KEY] = unpack_gaps(packed)
        if data.keys() <= _FIELD_SET:
            return cls(**data)
        # a slice's field read as None is as good as absent (to_dict writes every one)
        extra = {key: value for key, value in data.items() if key in SLICE_FIELDS and value is not None}
        own = {key: value for key, value in data.items() if key in _FIELD_SET}
        return cls(**own, extra=extra or None)


def is_failure(status: str) -> bool:
    """Whether a record's status counts as a failed request (errors, error rate, error charts)."""
    return status not in NOT_FAILED


FIELD_NAMES = tuple(f.name for f in fields(RequestRecord) if "doc" in f.metadata)  # all but `extra`
_FIELD_SET = frozenset(FIELD_NAMES)
CORE_DOCS: Mapping[str, FieldDoc] = {
    name: f.metadata["doc"] for f in fields(RequestRecord) if (name := f.name) in _FIELD_SET
}
# The core's keys a line of requests.jsonl carries only when set (most runs have no prefixes or
# sessions: ~90 bytes a line); a slice's fields are left out while None as they are written.
SPARSE_KEYS = tuple(name for name, described in CORE_DOCS.items() if described.sparse)


def _plain(docs: Mapping[str, FieldDoc]) -> list[tuple[str, str, ColumnKind]]:
    """(key in a line, column name, kind) of the fields the columns read as they are."""
    return [(name, name.removesuffix("_s"), d.column) for name, d in docs.items() if d.column is not None]


PLAIN_COLUMNS = _plain(CORE_DOCS)


def extra_columns() -> list[tuple[str, str, ColumnKind]]:
    """PLAIN_COLUMNS of the slices' fields (loadgen.collect.slice_registry): Columns.extra."""
    return _plain(SLICE_FIELDS)


def answer_after_fields() -> list[str]:
    """The slices' fields whose non-zero value means the first token may not have been the answer."""
    return [name for name, described in SLICE_FIELDS.items() if described.answer_after]


def field_docs() -> dict[str, FieldDoc]:
    """Every field's doc: the core's, then the slices'."""
    return {**CORE_DOCS, **SLICE_FIELDS}


def key_rows() -> list[tuple[str, str, str]]:
    """(key, type, meaning) of every key a line can hold, in the order to_dict gives them."""
    docs = field_docs()
    rows: list[tuple[str, str, str]] = []
    for name in [*(n for n in FIELD_NAMES if n != "request_class"), "request_class", *SLICE_FIELDS]:
        described = docs[name]
        kind = f"{described.type}; absent when null" if described.sparse else described.type
        rows.append((described.key or name, kind, described.meaning))
        rows.extend(described.also)
    return rows
