"""What any API's HTTP answer says beside its body: an error status as one line of text (the
body's start, credentials redacted), and when a refusal says to come back (Retry-After)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from datetime import UTC
from email.utils import parsedate_to_datetime

from kernel.redact import redact

# The error text of an HTTP error keeps this much of the body.
ERROR_BODY_LIMIT = 200


def parse_retry_after(value: str | None, now_s: float | None = None) -> float | None:
    """A Retry-After header in seconds from now: delta-seconds or an HTTP-date (RFC 9110 10.2.3);
    None when absent or unreadable. A date in the past is 0."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an asctime date carries no zone: HTTP dates are GMT
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now_s is None else now_s)
        return round(max(0.0, seconds), 3)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def http_error_text(code: int, body: bytes, secrets: Iterable[str] = ()) -> str:
    """`HTTP 429: <the body's first 200 bytes>`, credentials redacted, on one line."""
    # Redact more than is kept so a secret cut at the boundary is still recognised.
    text = redact(body[: ERROR_BODY_LIMIT * 4].decode("utf-8", "replace"), secrets)
    text = " ".join(text.split())
    if len(text) > ERROR_BODY_LIMIT:
        text = text[: ERROR_BODY_LIMIT - 1] + "…"
    return f"HTTP {code}: {text}" if text else f"HTTP {code}"
