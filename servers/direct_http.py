"""One request path: every request the tool sends a server goes straight to it, never through a
proxy named in the environment.

The load (Locust's FastHttpUser) never reads `http_proxy`, `HTTPS_PROXY`, `all_proxy` and the
like; urllib's default opener does. So the readiness poll, the /v1/models look-up, the external
adapter's checks, the first-token probe and the /metrics scraper all open their requests here:
a proxy variable can neither send them somewhere the load does not go nor fail them on a dead
proxy. Plain blocking stdlib, cooperative under gevent's patching.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from typing import cast

# An empty ProxyHandler replaces the default one, which reads the proxy variables.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def open_url(request: urllib.request.Request | str, timeout: float) -> http.client.HTTPResponse:
    """urlopen() without proxies: the response (close it), HTTPError for an HTTP error status,
    URLError/OSError when no answer came."""
    return cast(http.client.HTTPResponse, _OPENER.open(request, timeout=timeout))


def http_get(url: str, timeout: float, api_key: str | None = None) -> tuple[int, bytes]:
    """GET a URL: (status, body) for any HTTP answer; URLError/OSError if none came."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with open_url(request, timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()
