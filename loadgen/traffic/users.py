"""The Locust user: one concurrency slot that takes due requests and streams them.

Each user holds one keep-alive connection. It reads the SSE stream line by line as each line
lands (iterating the stream would wait for 4 KiB blocks and smear TTFT), with a bounded reader
(line_reader.py), and stamps each line with when its bytes arrived: the kernel's receive stamp
where the loop's sweeper reads it (stream_sweeper.py), else a monotonic clock. One
gevent.Timeout bounds the whole request in wall time: connect, headers, body.

A request planned to be cancelled (workload.cancel) is closed by the client as a user closes a
tab: a second timer its `cancel.after_s` after its send, or once `cancel.after_tokens` content chunks
have arrived. Its connection is dropped (the server sees the client go), and its record is
`cancelled` with what it received: first token, gaps, tokens, and the moment it was cancelled as
its end. A request whose answer ends (or fails) before its cancel point is recorded as it ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.client import HTTPException
from typing import Any, ClassVar

import gevent
from gevent import GreenletExit
from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser
from locust.exception import StopUser
from orjson import dumps

from kernel.redact import redact
from loadgen.collect.records import ErrorKind, RequestRecord, Status, set_stream_gaps
from loadgen.inputs.line_reader import LineTooLong, head_read, read_answer, read_body
from loadgen.scenario.model import Workload
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.balancer import NO_REPLICA, Balancer, Slot
from loadgen.traffic.dispatch import Dispatcher, Ticket
from loadgen.traffic.http_send import broken, no_response, post, release, short
from loadgen.traffic.images import attached_images, sends_images, warm_workload
from loadgen.traffic.openai_api import (
    StreamParser,
    TextStreamParser,
    http_error_text,
    parse_retry_after,
    request_body,
)
from loadgen.traffic.prompts import request_prompt
from loadgen.traffic.reasoning_request import reasoning_fields, reasoning_tokens_of
from loadgen.traffic.schedule import Phases, PlannedRequest
from loadgen.traffic.sessions import SessionBook
from loadgen.traffic.stream_sweeper import loop_sweeper
from loadgen.traffic.tool_request import calls_tool, tool_fields
from servers.base import Endpoint


class _TokensReached(Exception):
    """The planned number of tokens arrived: the client cancels (workload.cancel)."""


@dataclass
class RunContext:
    """Everything a user needs; set on a per-run subclass (Locust builds users from a class).
    `t0_ns` is set when the schedule starts, after the users exist. `workload` may be a mix:
    each request is sent with its class's settings (`classes`, by name)."""

    endpoint: Endpoint
    workload: Workload
    dispatcher: Dispatcher
    sink: Callable[[RequestRecord], None]
    t0_ns: int = 0
    # The run's phase table (its phases' constants, by index): set with t0_ns.
    phases: Phases = field(default_factory=dict)
    # Several replicas (a plan's verification): the balancer picks each request's replica.
    balancer: Balancer | None = None
    # Multi-turn sessions (workload.sessions): the open sessions, and where their next turns go
    # (the runner releases each at its due time). None without sessions.
    sessions: SessionBook | None = None
    next_turn: Callable[[PlannedRequest], None] | None = None
    classes: dict[str, Workload] = field(init=False, default_factory=dict)
    imaged: frozenset[str] = field(init=False, default=frozenset())  # classes that send images
    headers: dict[str, str] = field(init=False, default_factory=dict)
    secrets: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.classes = {name: workload for name, _, workload in workload_classes(self.workload)}
        self.imaged = frozenset(name for name, workload in self.classes.items() if sends_images(workload))
        for name in self.imaged:
            warm_workload(self.classes[name])
        # identity: a compressed SSE stream could not be read line by line as it lands
        self.headers = {
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        if self.endpoint.api_key:
            self.headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
            self.secrets = (self.endpoint.api_key,)


class OpenAIUser(FastHttpUser):
    abstract = True
    # not `context`: Locust's User already has a context() method
    run_context: ClassVar[RunContext]
    wait_time = constant(0)  # take() blocks until a request is due: no think time
    concurrency = 1  # one connection per slot
    max_retries = 0  # a retried request would hide a failure and double-count time
    # No per-read socket timeout (it costs a timer per SSE line); each request is bounded as a
    # whole by workload.request_timeout instead.
    network_timeout = None  # type: ignore[assignment]  # geventhttpclient passes it to settimeout()
    connection_timeout = None  # type: ignore[assignment]  # the request's deadline bounds the connect

    @task
    def serve(self) -> None:
        """Take and send requests until the dispatcher has no more. One task call serves them
        all: handing control back to Locust between requests (its task pick, wait and a yield)
        cost ~2% of the client's CPU. A client-side bug ends the call (Locust logs it and calls
        again); the request it hit is recorded first."""
        while True:
            self._serve_one()

    def _serve_one(self) -> None:
        dispatcher = self.run_context.dispatcher
        ticket = dispatcher.take()
        if ticket is None:
            raise StopUser()
        balancer = self.run_context.balancer
        slot = balancer.pick(ticket.planned.id) if balancer is not None else None
        try:
            if balancer is not None and slot is None:
                record = self._failed(ticket, NO_REPLICA, "http", http_status=503)
            else:
                record = self._perform(ticket, slot)
            self._finish(record, slot)
        except GreenletExit:
            # The run is being stopped (Ctrl-C): keep what this request measured so far.
            self._finish(self._failed(ticket, "interrupted: the run was stopped", "interrupted"), slot)
            raise
        except Exception as exc:  # a client-side bug must cost one request, never the record
            self._finish(self._failed(ticket, short(f"client error: {exc!r}"), "client"), slot)
            raise
        finally:
            if self.run_context.sessions is not None:  # a turn that ended without an answer noted
                self.run_context.sessions.abandon(ticket.planned)
            dispatcher.done()

    def _finish(self, record: RequestRecord, slot: Slot | None) -> None:
        """The record to the sink; the balancer hears how its replica did."""
        balancer = self.run_context.balancer
        if slot is not None and balancer is not None:
            record.replica = slot.number
            balancer.finished(slot, record)
        self.run_context.sink(record)

    def _perform(self, ticket: Ticket, slot: Slot | None = None) -> RequestRecord:
        ctx, planned = self.run_context, ticket.planned
        workload = ctx.classes.get(planned.request_class, ctx.workload)
        entry = workload.entries[planned.dataset_row] if planned.dataset_row is not None else None
        history = ctx.sessions.messages(planned, workload) if ctx.sessions is not None else None
        reasoning = workload.reasoning
        thinking = reasoning_tokens_of(workload, planned.request_class, planned.id) if reasoning else 0
        extra = reasoning_fields(workload, thinking) if reasoning else {}
        if workload.tools is not None:
            extra.update(tool_fields(workload, calls_tool(workload, planned.request_class, planned.id)))
        imaged = planned.request_class in ctx.imaged
        images, image_count = (
            attached_images(workload, planned.images, planned.id, entry) if imaged else ([], 0)
        )
        path, body = request_body(
            api=workload.api,
            model=planned.adapter or ctx.endpoint.model,  # a LoRA adapter is named as the model
            prompt=(entry.prompt if entry else planned.prompt) or request_prompt(planned, workload),
            max_tokens=planned.output_tokens + thinking,  # servers count reasoning in the budget
            ignore_eos=workload.ignore_eos,
            stream=workload.stream,
            messages=entry.messages if entry else history,
            extra=extra,
            images=images,
        )
        # Serialized here with orjson (a tenth of json's time; megabytes of base64 with images,
        # whose size is then known) rather than by Locust with json.
        data = dumps(body)
        # A replica's own URL: the pool keeps one connection per host.
        url = (ctx.endpoint.base_url if slot is None else slot.base_url) + path
        think, calls = reasoning.format if reasoning else "auto", workload.tools is not None
        parser = StreamParser(think, calls) if history is None else TextStreamParser(think, calls)
        status: Status = "ok"
        error: str | None = None
        kind: ErrorKind | None = None
        http_status: int | None = None
        retry_after: float | None = None
        done_ns = 0
        limit = workload.max_line
        response: Any = None
        timeout = gevent.Timeout(workload.request_timeout)
        # The user gives up this long after the send (None: not before the answer ends).
        plan_cancel = planned.cancel
        after_s = plan_cancel.after_s if plan_cancel is not None else None
        cancel = gevent.Timeout(after_s) if after_s is not None else None
        timeout.start()
        sent_ns = time.perf_counter_ns()  # after the body is built: from_send is the server's share
        if cancel is not None:
            cancel.start()
        try:
            # A stream's head is read with its body (read_answer): one wake-up for both. Until
            # it has come, a failure is no response (_answered).
            response = post(self.client.client.clientpool, url, data, ctx.headers, not workload.stream)
            if workload.stream:
                after_tokens = plan_cancel.after_tokens if plan_cancel is not None else None
                done_ns = _read_stream(response, parser, limit, after_tokens)
            http_status = response.status_code
            if http_status != 200:
                retry_after = parse_retry_after(response.get("retry-after"))
                status, kind = "error", "http"
                error = http_error_text(http_status, read_body(response, limit), ctx.secrets)
            elif not workload.stream:
                parser.feed_body(read_body(response, limit), time.perf_counter_ns())
        except gevent.Timeout as exc:
            if cancel is not None and exc is cancel:  # before the headers came, or after
                status, done_ns = "cancelled", time.perf_counter_ns()
            elif exc is not timeout:
                raise
            elif not _answered(response):
                status, kind, error = no_response(exc, timeout, workload.request_timeout)
            else:
                status, kind = "timeout", None
                error = f"timeout: response not complete within {workload.request_timeout:g}s"
        except _TokensReached:
            status, done_ns = "cancelled", time.perf_counter_ns()
        except LineTooLong as exc:  # the rest of the line is still on the wire: drop the connection
            status, kind, error = "error", "line_too_long", str(exc)
        except (OSError, HTTPException) as exc:  # refused; reset or closed mid-answer; malformed HTTP
            if not _answered(response):
                status, kind, error = no_response(exc, timeout, workload.request_timeout)
            else:
                status, kind, error = "error", *broken(exc)
        except ValueError as exc:  # refused by the HTTP client before sending (e.g. a bad URL)
            status, kind, error = "error", "client", short(f"{type(exc).__name__}: {exc}")
        finally:
            timeout.close()
            if cancel is not None:
                cancel.close()
            if http_status is None and _answered(response):  # the stream's reading raised
                http_status = response.status_code
            if response is not None:  # a cancelled stream is left unread: its connection goes
                release(response, drop=kind == "line_too_long" or status == "cancelled")
            if status == "cancelled" and not http_status:
                self._reset_connections()
        done_ns = done_ns or time.perf_counter_ns()
        result = parser.result
        if status == "ok" and result.error:
            status, kind, error = "error", result.error_kind, short(redact(result.error, ctx.secrets))
        elif status == "ok" and not result.done:
            status, kind, error = "error", "protocol", "response ended before it was complete"
        streamed = workload.stream
        prompt_tokens = result.usage_prompt_tokens
        if prompt_tokens is None and entry is not None:  # no usage: the client tokenizer's count
            prompt_tokens = entry.tokens
        record = RequestRecord(
            id=planned.id,
            phase=planned.phase,
            scheduled_s=_seconds(ticket.scheduled_ns, ctx.t0_ns),
            sent_s=_seconds(sent_ns, ctx.t0_ns),
            first_token_s=(
                _seconds(result.first_token_ns, ctx.t0_ns) if streamed and result.first_token_ns else None
            ),
            done_s=_seconds(done_ns, ctx.t0_ns),
            prompt_tokens=prompt_tokens,
            output_tokens=result.output_tokens,
            tokens_source=result.tokens_source,
            status=status,
            error=error,
            error_kind=kind,
            http_status=http_status,
            retry_after_s=retry_after,
            warmup=planned.warmup,
            lag_ms=round(ticket.lag_ns / 1e6, 4),
            slot_wait_ms=round(ticket.slot_wait_ns / 1e6, 4),
            level=ctx.phases[planned.phase].level,
            request_class=planned.request_class,
            cached_tokens=result.usage_cached_tokens,
            prefix_group=planned.prefix.group if planned.prefix is not None else None,
            adapter=planned.adapter,
        )
        if streamed:
            set_stream_gaps(record, result.chunk_ns)
        if calls:
            record.tool_calls = len(result.tool_calls)
            record.tool_calls_valid = sum(call.valid for call in result.tool_calls.values())
        if result.reasoning_chunks or result.usage_reasoning_tokens or result.tool_call_chunks:
            record.reasoning_tokens = result.reasoning_tokens
            if streamed:
                answer = result.answer_ns
                record.first_answer_s = _seconds(answer, ctx.t0_ns) if answer is not None else None
                record.reasoning_ms = result.reasoning_ms()
        if imaged:
            record.images, record.request_bytes = image_count, len(data)
        if history is not None and ctx.sessions is not None and isinstance(parser, TextStreamParser):
            following = ctx.sessions.answered(planned, record, parser.text, result.tool_calls)
            if following is not None and ctx.next_turn is not None:
                ctx.next_turn(following)
        return record

    def _reset_connections(self) -> None:
        """Close this user's connections after a cancel before the response came. The cancel can
        land anywhere in the HTTP client, also while the request is being sent, where the
        client neither closes the socket nor frees its pool slot: with one slot per user, every
        later request would then wait for it until its timeout. A fresh pool is made on the
        next request (the cancelled connection could not be reused anyway)."""
        self.client.client.clientpool.close()

    def _failed(
        self, ticket: Ticket, error: str, kind: ErrorKind, http_status: int | None = None
    ) -> RequestRecord:
        ctx = self.run_context
        record = RequestRecord(
            id=ticket.planned.id,
            phase=ticket.planned.phase,
            scheduled_s=_seconds(ticket.scheduled_ns, ctx.t0_ns),
            sent_s=_seconds(ticket.admitted_ns, ctx.t0_ns),
            done_s=_seconds(time.perf_counter_ns(), ctx.t0_ns),
            status="error",
            error=error,
            error_kind=kind,
            http_status=http_status,
            warmup=ticket.planned.warmup,
            lag_ms=round(ticket.lag_ns / 1e6, 4),
            slot_wait_ms=round(ticket.slot_wait_ns / 1e6, 4),
            level=ctx.phases[ticket.planned.phase].level,
            request_class=ticket.planned.request_class,
            prefix_group=ticket.planned.prefix.group if ticket.planned.prefix is not None else None,
            adapter=ticket.planned.adapter,
        )
        if ctx.sessions is not None:  # a failed turn ends its session: the record says which
            ctx.sessions.answered(ticket.planned, record, "")
        return record


def _answered(response: Any) -> bool:
    """Whether the server answered: the response's head came (before it, a failure is no response)."""
    return response is not None and head_read(response)


def _read_stream(
    stream: Any, parser: StreamParser, limit: int, cancel_after_tokens: int | None = None
) -> int:
    """Read the head and, for a 200, SSE lines to the end of the body; return when `[DONE]` (or
    the last line) landed (0 for another status: its body is left unread).
    Raise _TokensReached once `cancel_after_tokens` content chunks arrived before the end.
    Each line is stamped with when the receive that completed it arrived (line_reader.py)."""
    result = parser.result
    stop_at = cancel_after_tokens or 0
    feed_lines = parser.feed_lines

    def take_until(lines: list[bytearray], arrived_ns: int) -> bool:
        for line in lines:
            feed_lines([line], arrived_ns)
            if len(result.chunk_ns) >= stop_at and not result.done:
                raise _TokensReached
        return result.error is not None

    take = take_until if stop_at else feed_lines
    last_ns = read_answer(stream, limit, take, loop_sweeper())
    if result.error or stream.status_code != 200:
        return last_ns
    return result.done_ns or last_ns or time.perf_counter_ns()


def _seconds(ns: int, t0_ns: int) -> float:
    return round((ns - t0_ns) / 1e9, 6)
