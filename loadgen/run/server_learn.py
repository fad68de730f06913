"""What the run learns from the server before its first request (loadgen.features.slice
.Prepares): a KServe v2 model's metadata, for one. Asked once the server is ready, before the
probe (which sends what was learned), bounded by one deadline; a server that cannot tell stops
the run with the reason.

Plain urllib on the gevent-patched socket, never through a proxy (`servers.direct_http`), as the
probe.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from functools import partial

from kernel.redact import redact
from loadgen.features import preparers
from loadgen.scenario.model import Scenario
from loadgen.scenario.workload import Workload, each_class
from servers.adapter import Endpoint
from servers.direct_http import open_url

MAX_BODY = 8 * 1024 * 1024  # a metadata answer is a few KiB: more is no metadata


def learned(scenario: Scenario, endpoint: Endpoint, timeout_s: float) -> Scenario:
    """`scenario` with what the slices learned of the endpoint's model (the same object where
    none needed anything); ValueError with the reason where the server's answer won't do."""
    fetch = partial(_get, endpoint, timeout_s)

    def learn(workload: Workload) -> Workload:
        for part in preparers():
            workload = part.learn(workload, endpoint.model, fetch)
        return workload

    workload = each_class(scenario.workload, learn)
    return scenario if workload is scenario.workload else scenario.model_copy(update={"workload": workload})


def _get(endpoint: Endpoint, timeout_s: float, path: str) -> bytes:
    """GET `path` of the endpoint: its body (ValueError: no answer, or not a 200)."""
    url = endpoint.base_url + path
    headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
    secrets: tuple[str, ...] = ()
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
        secrets = (endpoint.api_key,)
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with open_url(request, timeout_s) as response:
            body: bytes = response.read(MAX_BODY + 1)
    except urllib.error.HTTPError as exc:
        detail = " ".join(exc.read(300).decode("utf-8", "replace").split())
        raise ValueError(f"GET {url} answered HTTP {exc.code}: {redact(detail, secrets)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ValueError(f"GET {url} failed: {redact(str(reason), secrets)}") from None
    if len(body) > MAX_BODY:
        raise ValueError(f"GET {url} answered more than {MAX_BODY // 2**20} MiB")
    return body
