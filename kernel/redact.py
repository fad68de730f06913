"""Keep credentials out of every message the tool prints or writes.

Anything that echoes text from the outside world (a server's error body, Grafana's answer, an
exception's repr) goes through `redact()` first: Authorization header values, bearer tokens,
`api_key`/`token`/`password`-style fields, URL passwords, and any secret the run knows by value
(`register_secret`: API keys, Grafana tokens, the worker secret).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"

# `Authorization: Bearer abc`, `"authorization": "Basic abc"`, `Bearer abc` on its own.
_AUTH_HEADER = re.compile(
    r"""(?i)(authorization["']?\s*[:=]\s*["']?)(?:(bearer|basic|token)\s+)?[^\s"',;}]+"""
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}")
# `api_key=abc`, `"token": "abc"`, `password: abc`, `X-Api-Key: abc` (query strings, JSON, headers).
_SECRET_FIELD = re.compile(
    r"""(?i)\b((?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password|passwd)["']?\s*[:=]\s*["']?)[^\s"'&,;}]+"""
)

# `scheme://user:password@host`: the password.
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@")

_known: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact this exact value wherever it appears from now on (e.g. an API key read from the
    environment). Short values are ignored: redacting 'a' would mangle every message."""
    if value and len(value) >= 4:
        _known.add(value)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every credential it carries replaced by [redacted]."""
    for secret in sorted({*_known, *secrets}, key=len, reverse=True):  # longest first: no leftovers
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + (f"{m.group(2)} " if m.group(2) else "") + REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _SECRET_FIELD.sub(lambda m: m.group(1) + REDACTED, text)
