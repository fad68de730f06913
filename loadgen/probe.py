"""One request before the load: proves the endpoint serves the model and times the first token.

Runs in the load generator's (gevent-patched) process with plain urllib, so it blocks only its
own greenlet. A failure here stops the run with a clear message instead of a run of errors.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from loadgen.scenario import Workload
from loadgen.traffic.openai_api import StreamParser, prompt_text, request_body
from servers.base import Endpoint


class ProbeError(Exception):
    pass


def first_token_ns(endpoint: Endpoint, workload: Workload, timeout_s: float) -> int:
    """Send one short streaming request; return perf_counter_ns when its first token arrived."""
    path, body = request_body(
        api=workload.api,
        model=endpoint.model,
        prompt=prompt_text(8, 0),
        max_tokens=2,
        ignore_eos=workload.ignore_eos,
        stream=True,
    )
    url = endpoint.base_url + path
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    parser = StreamParser()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            for line in iter(response.readline, b""):
                parser.feed(line, time.perf_counter_ns())
                if parser.result.done or parser.result.error:
                    break
    except urllib.error.HTTPError as exc:
        detail = exc.read(300).decode("utf-8", "replace")
        raise ProbeError(f"{url} answered a test request with HTTP {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProbeError(f"cannot reach {url}: {reason}") from None
    if parser.result.error:
        raise ProbeError(f"{url}: {parser.result.error}")
    first = parser.result.first_token_ns
    if first is None:
        raise ProbeError(f"{url} streamed no tokens for a test request")
    return first
