"""One request before the load: proves the endpoint serves the model and times the first token.

Runs in the load generator's (gevent-patched) process with plain urllib, so it blocks only its
own greenlet, and it can be killed (a stop event) at any wait. Like the load, it never goes
through a proxy (`servers.direct_http`). The whole probe has one deadline (`timeout_s`), not a
per-read timeout: a server that never answers or streams forever fails it in time. Lines are
bounded by `max_line`. A failure here stops the run with a clear message instead of a run of
errors.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from typing import Any

import gevent

from kernel.redact import redact
from loadgen.features import preparers
from loadgen.features.asks import gather
from loadgen.inputs.line_reader import size_text
from loadgen.inputs.vocabulary import prompt_text
from loadgen.scenario.model import Workload
from loadgen.scenario.workload import workload_classes
from loadgen.wire.answer import AnswerReader
from loadgen.wire.apis import wire_api
from loadgen.wire.call import Call
from servers.adapter import Endpoint
from servers.direct_http import open_url


class ProbeError(Exception):
    pass


def first_token_ns(
    endpoint: Endpoint, workload: Workload, timeout_s: float, *, max_line: int | None = None
) -> int:
    """Send one short streaming request; return perf_counter_ns when its first token arrived.
    The request must end (`[DONE]`) within `timeout_s`; lines are at most `max_line` bytes
    (default: the workload's). An API that answers in one body (embeddings) is asked once, and
    the time is when its whole answer arrived; it carries one item (an embeddings input beside the
    prompt, a rerank document). What else an API needs (a transcription's recording) is its own
    (WireApi.probe), or a slice's (Prepares.probe: a tensor request's batch of one)."""
    api = wire_api(workload.api)
    streams = api.metrics == "generation"
    call = Call(
        model=endpoint.model,
        prompt=prompt_text(8, 0),
        max_tokens=2,
        ignore_eos=workload.ignore_eos,
        stream=streams,
        items=() if streams else (prompt_text(8, 1),),  # an API of items' one item (rerank's document)
    )
    call = api.probe(call, workload.stream)
    first_class = workload_classes(workload)[0][2]
    call = gather([each for p in preparers() if (each := p.probe(first_class)) is not None]).onto(call)
    streams = streams and call.stream
    sent = api.request(call)
    url = endpoint.base_url + sent.path
    headers = {"Content-Type": sent.content_type, "Accept-Encoding": "identity", **dict(sent.headers)}
    secrets: tuple[str, ...] = ()
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
        secrets = (endpoint.api_key,)
    request = urllib.request.Request(url, data=sent.data, headers=headers, method="POST")
    limit = max_line if max_line is not None else workload.max_line
    deadline = gevent.Timeout(timeout_s)
    deadline.start()
    try:
        parser = api.reader(think="auto", calls=False, keep_text=False, request=sent)
        _stream(parser, request, url, time.monotonic() + timeout_s, limit, timeout_s, secrets, streams)
    except gevent.Timeout as exc:
        if exc is not deadline:
            raise
        raise ProbeError(f"{url} did not complete a test request within {timeout_s:g}s") from None
    finally:
        deadline.close()
    if parser.result.error:
        raise ProbeError(f"{url}: {redact(parser.result.error, secrets)}")
    first = parser.result.first_token_ns if streams else parser.result.done_ns
    if first is None:
        raise ProbeError(f"{url} streamed no tokens for a test request")
    return first


def _stream(
    parser: AnswerReader,
    request: urllib.request.Request,
    url: str,
    deadline: float,
    limit: int,
    timeout_s: float,
    secrets: tuple[str, ...],
    streams: bool = True,
) -> None:
    """Read the probe's stream (or whole body) to its end into `parser`. The gevent.Timeout around it ends any
    wait in a patched process; the monotonic check and the socket timeout keep it bounded
    without one."""
    late = ProbeError(f"{url} did not complete a test request within {timeout_s:g}s")
    try:
        with open_url(request, timeout_s) as response:
            if not streams:
                body = response.read(limit + 1)
                if len(body) > limit:
                    raise ProbeError(f"{url} sent a body longer than workload.max_line ({size_text(limit)})")
                parser.feed_body(body, time.perf_counter_ns())
                return
            while not (parser.result.done or parser.result.error):
                line = _read_line(response, limit, url)
                if not line:
                    break
                parser.feed_lines([line], time.perf_counter_ns())
                if time.monotonic() > deadline:
                    raise late
                gevent.sleep(0)  # a stream that never pauses would otherwise never yield
    except urllib.error.HTTPError as exc:
        detail = " ".join(exc.read(300).decode("utf-8", "replace").split())
        raise ProbeError(
            f"{url} answered a test request with HTTP {exc.code}: {redact(detail, secrets)}"
        ) from None
    except TimeoutError:
        raise late from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise late from None
        raise ProbeError(f"cannot reach {url}: {redact(str(reason), secrets)}") from None


def _read_line(response: Any, limit: int, url: str) -> bytes:
    line: bytes = response.readline(limit + 1)
    if len(line) > limit and not line.endswith(b"\n"):
        raise ProbeError(f"{url} sent a line longer than workload.max_line ({size_text(limit)})")
    return line
