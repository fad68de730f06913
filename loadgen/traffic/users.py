"""The Locust user: one concurrency slot that takes due requests and streams them.

Each user holds one keep-alive connection. It reads the SSE stream line by line as each line
lands (iterating the stream would wait for 4 KiB blocks and smear TTFT), with a bounded reader
(line_reader.py), and stamps each line with when its bytes arrived: the kernel's receive stamp
where the loop's sweeper reads it (stream_sweeper.py), else a monotonic clock. One
gevent.Timeout bounds the whole request in wall time: connect, headers, body.

A request planned to stop early (its `stop`, from a slice's stops) is closed by the client as a
user closes a tab: a second timer its `stop.after_s` after its send, or once `stop.after_tokens`
content chunks have arrived. Its connection is dropped (the server sees the client go), and its
record is `cancelled` with what it received: first token, gaps, tokens, and the moment it was
stopped as its end. A request whose answer ends (or fails) before its stop is recorded as it ended.
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

from kernel.redact import redact
from loadgen.collect.field_doc import ExtraValue
from loadgen.collect.records import ErrorKind, RequestRecord, set_stream_gaps
from loadgen.features import attachments, labellers, readers
from loadgen.features.asks import NO_ASKS, gather
from loadgen.features.slice import Asking, Attached, Attaches, Labels, Reads
from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.inputs.line_reader import LineTooLong, read_body
from loadgen.scenario.model import Workload
from loadgen.scenario.workload import workload_classes
from loadgen.traffic.balancer import NO_REPLICA, Balancer, Slot
from loadgen.traffic.dispatch import Dispatcher, Ticket
from loadgen.traffic.exchange_outcome import Outcome, TokensReached, answered, read_stream, sort_ending
from loadgen.traffic.http_send import HeaderSets, post, release, short
from loadgen.traffic.prompts import request_prompt, shared_group
from loadgen.traffic.schedule import Phases, PlannedRequest
from loadgen.traffic.session_book import SessionBook
from loadgen.wire.answer import AnswerReader
from loadgen.wire.apis import wire_api
from loadgen.wire.call import JSON_TYPE, Call
from loadgen.wire.http_answer import http_error_text, parse_retry_after
from servers.adapter import Endpoint


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
    # The feature slices that attach to requests (loadgen.features): each with its name and the
    # classes whose requests it attaches to; only those some class has. And those that read
    # every answer.
    attaching: tuple[tuple[str, Attaches, frozenset[str]], ...] = field(init=False, default=())
    reading: tuple[Reads, ...] = field(init=False, default=())
    # And those that label a request from its plan alone (kept on a record that failed unsent).
    labelling: tuple[tuple[str, Labels], ...] = field(init=False, default=())
    headers: dict[str, str] = field(init=False, default_factory=dict)
    typed_headers: HeaderSets = field(init=False)
    secrets: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.classes = {name: workload for name, _, workload in workload_classes(self.workload)}
        senders = [(name, part, part.senders(self.classes)) for name, part in attachments()]
        self.attaching = tuple(each for each in senders if each[2])
        self.reading = readers()
        attaching = {name for name, _, _ in self.attaching}
        self.labelling = tuple((name, part) for name, part in labellers() if name in attaching)
        # identity: a compressed SSE stream could not be read line by line as it lands
        self.headers = {
            "Accept-Encoding": "identity",
            "Content-Type": JSON_TYPE,
            "Accept": "application/json",
        }
        if self.endpoint.api_key:
            self.headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
            self.secrets = (self.endpoint.api_key,)
        self.typed_headers = HeaderSets(self.headers)


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
        """Build the request, send it and sort how it ended, then record it (a session's request
        that cannot be sent, failed unsent)."""
        prepared = self._prepare(ticket.planned, slot)
        if prepared.broken is not None:
            return self._failed(ticket, prepared.broken, "protocol")
        outcome = self._exchange(prepared, ticket.planned)
        return self._record(ticket, prepared, outcome)

    def _prepare(self, planned: PlannedRequest, slot: Slot | None) -> _Prepared:
        """The request as it goes over the wire: what it asks (with each feature's part), in
        its API's format, and the reader for its answer."""
        ctx = self.run_context
        workload = ctx.classes.get(planned.request_class, ctx.workload)
        entry = workload.entries[planned.dataset_row] if planned.dataset_row is not None else None
        turn = ctx.sessions.turn(planned, workload) if ctx.sessions is not None else None
        history = turn.messages if turn is not None else None
        attached = self._attached(workload, planned, entry) if ctx.attaching else []
        asks = gather([each for _, each in attached]) if attached else NO_ASKS
        call = Call(
            model=asks.model or ctx.endpoint.model,  # a slice may name another (an adapter)
            prompt=(entry.prompt if entry else planned.prompt) or request_prompt(planned, workload),
            max_tokens=planned.output_tokens,
            ignore_eos=workload.ignore_eos,
            stream=workload.stream,
            messages=entry.messages if entry else history,
            continues=turn.continues if turn is not None else None,
            store=turn is not None and turn.store,
        )
        api = wire_api(workload.api)
        request = api.request(asks.onto(call))
        return _Prepared(
            # A replica's own URL: the pool keeps one connection per host.
            url=(ctx.endpoint.base_url if slot is None else slot.base_url) + request.path,
            data=request.data,
            headers=ctx.typed_headers.of(request.content_type, request.headers),
            # A tokenizer re-counts the answer after the run (loadgen.collect.retokenize): keep its text.
            reader=asks.reader(api, request, keep_text=history is not None or workload.tokenizer is not None),
            items=request.items,
            workload=workload,
            entry=entry,
            attached=attached,
            broken=turn.broken if turn is not None else None,
        )

    def _attached(
        self, workload: Workload, planned: PlannedRequest, entry: DatasetEntry | None
    ) -> list[tuple[Attaches, Attached]]:
        """What each slice that attaches to the request's class adds to it."""
        return [
            (part, part.attach(workload, _asking(planned, name, entry)))
            for name, part, classes in self.run_context.attaching
            if planned.request_class in classes
        ]

    def _exchange(self, prepared: _Prepared, planned: PlannedRequest) -> Outcome:
        """Send, read the answer, and sort how it ended. One timer bounds the whole request;
        a planned stop is a second one (after a time) or a count of chunks."""
        workload, out = prepared.workload, Outcome()
        timeout = gevent.Timeout(workload.request_timeout)
        after_s = planned.stop.after_s if planned.stop is not None else None
        stop = gevent.Timeout(after_s) if after_s is not None else None
        response: Any = None
        timeout.start()
        out.sent_ns = time.perf_counter_ns()  # after the body is built: from_send is the server's share
        if stop is not None:
            stop.start()
        try:
            # A stream's head is read with its body (read_answer): one wake-up for both. Until
            # it has come, a failure is no response (answered).
            response = post(
                self.client.client.clientpool,
                prepared.url,
                prepared.data,
                prepared.headers,
                not workload.stream,
            )
            self._read(response, prepared, planned, out)
        except (gevent.Timeout, TokensReached, LineTooLong, OSError, HTTPException, ValueError) as exc:
            if not sort_ending(exc, out, response, timeout, stop, workload.request_timeout):
                raise  # another greenlet's timeout
        finally:
            timeout.close()
            if stop is not None:
                stop.close()
            self._release(response, out)
        out.done_ns = out.done_ns or time.perf_counter_ns()
        result = prepared.reader.result
        if out.status == "ok" and result.error:
            out.status, out.kind = "error", result.error_kind
            out.error = short(redact(result.error, self.run_context.secrets))
        elif out.status == "ok" and not result.done:
            out.status, out.kind, out.error = "error", "protocol", "response ended before it was complete"
        return out

    def _read(self, response: Any, prepared: _Prepared, planned: PlannedRequest, out: Outcome) -> None:
        """The answer into the reader (a stream as it lands, a body whole); an error status's
        text and Retry-After into `out`."""
        workload, limit = prepared.workload, prepared.workload.max_line
        if workload.stream:
            after_tokens = planned.stop.after_tokens if planned.stop is not None else None
            out.done_ns = read_stream(response, prepared.reader, limit, after_tokens)
        out.http_status = response.status_code
        if out.http_status != 200:
            out.retry_after = parse_retry_after(response.get("retry-after"))
            out.status, out.kind = "error", "http"
            out.error = http_error_text(out.http_status, read_body(response, limit), self.run_context.secrets)
        elif not workload.stream:
            prepared.reader.feed_body(read_body(response, limit), time.perf_counter_ns())

    def _release(self, response: Any, out: Outcome) -> None:
        """The connection back to the pool, or dropped where it cannot be reused."""
        if out.http_status is None and answered(response):  # the stream's reading raised
            out.http_status = response.status_code
        if response is not None:  # a stopped stream is left unread: its connection goes
            release(response, drop=out.kind == "line_too_long" or out.status == "cancelled")
        if out.status == "cancelled" and not out.http_status:
            self._reset_connections()

    def _record(self, ticket: Ticket, prepared: _Prepared, out: Outcome) -> RequestRecord:
        ctx, planned, result = self.run_context, ticket.planned, prepared.reader.result
        streamed = prepared.workload.stream
        prompt_tokens = result.usage_prompt_tokens
        if prompt_tokens is None and prepared.entry is not None:  # no usage: the client tokenizer's count
            prompt_tokens = prepared.entry.tokens
        record = RequestRecord(
            id=planned.id,
            phase=planned.phase,
            scheduled_s=_seconds(ticket.scheduled_ns, ctx.t0_ns),
            sent_s=_seconds(out.sent_ns, ctx.t0_ns),
            first_token_s=(
                _seconds(result.first_token_ns, ctx.t0_ns) if streamed and result.first_token_ns else None
            ),
            done_s=_seconds(out.done_ns, ctx.t0_ns),
            prompt_tokens=prompt_tokens,
            output_tokens=result.output_tokens,
            tokens_source=result.tokens_source,
            status=out.status,
            error=out.error,
            error_kind=out.kind,
            http_status=out.http_status,
            retry_after_s=out.retry_after,
            warmup=planned.warmup,
            lag_ms=round(ticket.lag_ns / 1e6, 4),
            slot_wait_ms=round(ticket.slot_wait_ns / 1e6, 4),
            level=ctx.phases[planned.phase].level,
            request_class=planned.request_class,
            cached_tokens=result.usage_cached_tokens,
            prefix_group=shared_group(planned, prepared.workload),
            items=prepared.items or None,
        )
        if streamed:
            set_stream_gaps(record, result.chunk_ns)
        if prepared.workload.tokenizer is not None:  # counted three ways: what was asked, and the text
            record.prompt_asked = planned.prompt_tokens
            record.answer_text = prepared.reader.text
        self._add_features(record, prepared, planned)
        return record

    def _add_features(self, record: RequestRecord, prepared: _Prepared, planned: PlannedRequest) -> None:
        """The features' fields of the record: when the first answer came where something streamed
        before it, the slices' (each from what it attached and the answer); a session's turn
        answered (its next one released)."""
        ctx, result, streamed = self.run_context, prepared.reader.result, prepared.workload.stream
        if streamed and result.answer_later:
            answer = result.answer_ns
            record.first_answer_s = _seconds(answer, ctx.t0_ns) if answer is not None else None
        extra: dict[str, ExtraValue] = {}
        for reads in ctx.reading:
            extra.update(reads.fields(result, streamed))
        for part, attached in prepared.attached:
            extra.update(part.fields(attached, len(prepared.data), result, streamed))
        if extra:  # a field left None is as good as absent, as a line read back holds it
            record.extra = {name: value for name, value in extra.items() if value is not None} or None
        text = prepared.reader.text
        if ctx.sessions is not None and text is not None:  # a session's turn: its reader kept the text
            following = ctx.sessions.answered(planned, record, text, result.tool_calls, result.answer_id)
            if following is not None and ctx.next_turn is not None:
                ctx.next_turn(following)

    def _reset_connections(self) -> None:
        """Close this user's connections after a stop before the response came. The stop can
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
            prefix_group=shared_group(
                ticket.planned, ctx.classes.get(ticket.planned.request_class, ctx.workload)
            ),
        )
        if ctx.labelling:
            self._label(record, ticket.planned)
        if ctx.sessions is not None:  # a failed turn ends its session: the record says which
            ctx.sessions.answered(ticket.planned, record, "")
        return record

    def _label(self, record: RequestRecord, planned: PlannedRequest) -> None:
        """A failed request's record with the fields its plan gives it (its adapter)."""
        ctx = self.run_context
        workload = ctx.classes.get(planned.request_class, ctx.workload)
        extra: dict[str, ExtraValue] = {}
        for name, labels in ctx.labelling:
            extra.update(labels.label(workload, _asking(planned, name, None)))
        record.extra = {name: value for name, value in extra.items() if value is not None} or None


def _asking(planned: PlannedRequest, name: str, entry: DatasetEntry | None) -> Asking:
    """The request as slice `name` sees it."""
    return Asking(planned.request_class, planned.id, planned.drawn.get(name, 0), entry, planned.prompt_tokens)


@dataclass(slots=True)
class _Prepared:
    """One request ready to send (OpenAIUser._prepare). `attached`: what each slice attached to
    it (empty: its class has none that attaches); `broken`: why a session's request cannot be
    sent (its previous answer, to continue, came without an id)."""

    url: str
    data: bytes
    headers: dict[str, str]  # the run's for its Content-Type: one object a type, the head made once
    reader: AnswerReader
    workload: Workload
    entry: DatasetEntry | None
    attached: list[tuple[Attaches, Attached]]
    items: int  # what an API of items sent (0: a generation API)
    broken: str | None = None


def _seconds(ns: int, t0_ns: int) -> float:
    return round((ns - t0_ns) / 1e9, 6)
