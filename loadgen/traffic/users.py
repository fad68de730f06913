"""The Locust user: one concurrency slot that takes due requests and streams them.

Each user holds one keep-alive connection. It reads the SSE stream line by line with
`resp.stream.readline()`, which returns each line as it lands (iterating the stream would wait
for 4 KiB blocks and smear TTFT), and stamps each line with a monotonic clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gevent
from gevent import GreenletExit
from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser
from locust.exception import StopUser

from loadgen.collect.records import RequestRecord, Status, summarize_itl
from loadgen.scenario import Workload
from loadgen.traffic.dispatch import Dispatcher, Ticket
from loadgen.traffic.openai_api import StreamParser, prompt_text, request_body
from loadgen.workload import workload_classes
from servers.base import Endpoint

ERROR_TEXT_LIMIT = 200


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
    # More than one: requests go round robin by id (client-side balancing across replicas).
    spread: tuple[Endpoint, ...] = ()
    classes: dict[str, Workload] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.classes = {name: workload for name, _, workload in workload_classes(self.workload)}


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

    @task
    def serve(self) -> None:
        dispatcher = self.run_context.dispatcher
        ticket = dispatcher.take()
        if ticket is None:
            raise StopUser()
        try:
            self.run_context.sink(self._perform(ticket))
        except GreenletExit:
            # The run is being stopped (Ctrl-C): keep what this request measured so far.
            self.run_context.sink(self._failed(ticket, "interrupted: the run was stopped"))
            raise
        except Exception as exc:  # a client-side bug must cost one request, never the record
            self.run_context.sink(self._failed(ticket, _short(f"client error: {exc!r}")))
            raise
        finally:
            dispatcher.done()

    def _perform(self, ticket: Ticket) -> RequestRecord:
        ctx, planned = self.run_context, ticket.planned
        workload = ctx.classes.get(planned.request_class, ctx.workload)
        entry = workload.entries[planned.dataset_row] if planned.dataset_row is not None else None
        path, body = request_body(
            api=workload.api,
            model=ctx.endpoint.model,
            prompt=(entry.prompt if entry else planned.prompt)
            or prompt_text(planned.prompt_tokens, planned.id),
            max_tokens=planned.output_tokens,
            ignore_eos=workload.ignore_eos,
            stream=workload.stream,
            messages=entry.messages if entry else None,
        )
        url = path
        if len(ctx.spread) > 1:  # an absolute URL: Locust keeps one connection pool per host
            url = ctx.spread[planned.id % len(ctx.spread)].base_url + path
        headers = {"Authorization": f"Bearer {ctx.endpoint.api_key}"} if ctx.endpoint.api_key else {}
        parser = StreamParser()
        status: Status = "ok"
        error: str | None = None
        http_status: int | None = None
        done_ns = 0
        timeout = gevent.Timeout(workload.request_timeout)
        timeout.start()
        sent_ns = time.perf_counter_ns()  # after the body is built: from_send is the server's share
        try:
            response = self.client.request(
                "POST", url, json=body, stream=workload.stream, headers=headers, name=path
            )
            try:
                http_status = response.status_code or None
                if not http_status:
                    reason = getattr(response, "error", "no response")
                    status, error = "error", _short(f"connection failed: {reason}")
                elif http_status != 200:
                    status, error = "error", _short(f"HTTP {http_status}: {_body_text(response)}")
                elif workload.stream:
                    done_ns = _read_stream(response, parser)
                else:
                    parser.feed_body(response.content or b"", time.perf_counter_ns())
            finally:
                _release(response)
        except gevent.Timeout as exc:
            if exc is not timeout:
                raise
            status, error = "timeout", f"no complete response within {workload.request_timeout:g}s"
        except (OSError, ValueError) as exc:  # connection reset mid-stream, malformed HTTP
            status, error = "error", _short(f"{type(exc).__name__}: {exc}")
        finally:
            timeout.close()
        done_ns = done_ns or time.perf_counter_ns()
        result = parser.result
        if status == "ok" and result.error:
            status, error = "error", _short(result.error)
        elif status == "ok" and not result.done:
            status, error = "error", "response ended before it was complete"
        streamed = workload.stream
        prompt_tokens = result.usage_prompt_tokens
        if prompt_tokens is None and entry is not None:  # no usage: the client tokenizer's count
            prompt_tokens = entry.tokens
        return RequestRecord(
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
            itl_ms=summarize_itl(result.itl_ms()) if streamed else [],
            status=status,
            error=error,
            http_status=http_status,
            warmup=planned.warmup,
            lag_ms=round(ticket.lag_ns / 1e6, 4),
            slot_wait_ms=round(ticket.slot_wait_ns / 1e6, 4),
            level=planned.level,
            request_class=planned.request_class,
        )

    def _failed(self, ticket: Ticket, error: str) -> RequestRecord:
        ctx = self.run_context
        return RequestRecord(
            id=ticket.planned.id,
            phase=ticket.planned.phase,
            scheduled_s=_seconds(ticket.scheduled_ns, ctx.t0_ns),
            sent_s=_seconds(ticket.admitted_ns, ctx.t0_ns),
            done_s=_seconds(time.perf_counter_ns(), ctx.t0_ns),
            status="error",
            error=error,
            warmup=ticket.planned.warmup,
            lag_ms=round(ticket.lag_ns / 1e6, 4),
            slot_wait_ms=round(ticket.slot_wait_ns / 1e6, 4),
            level=ticket.planned.level,
            request_class=ticket.planned.request_class,
        )


def _read_stream(response: Any, parser: StreamParser) -> int:
    """Read SSE lines to the end of the body; return when `[DONE]` (or the last line) landed."""
    stream = response.stream
    done_ns = 0
    while True:
        line = stream.readline(b"\n")
        arrived_ns = time.perf_counter_ns()
        if not line:
            return done_ns or arrived_ns
        parser.feed(line, arrived_ns)
        if parser.result.done and not done_ns:
            done_ns = arrived_ns
        if parser.result.error:
            return arrived_ns


def _release(response: Any) -> None:
    """Give the connection back, or close it if the body was not read to its end. A response
    for a failed connection (Locust's ErrorResponse) has no socket to give back."""
    if getattr(response, "_response", None) is not None:
        response.release()


def _body_text(response: Any) -> str:
    try:
        raw = response.stream.read(ERROR_TEXT_LIMIT * 4)
    except (OSError, ValueError, AttributeError):
        return ""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


def _seconds(ns: int, t0_ns: int) -> float:
    return round((ns - t0_ns) / 1e9, 6)
