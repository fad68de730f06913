"""Report facts in words that more than one format says the same way."""

from __future__ import annotations

from loadgen.fmt import format_number
from loadgen.report.model.evaluation import Capacity


def capacity_words(capacity: Capacity) -> str:
    """The capacity in words, e.g. "7.4 req/s", or "2.5 sessions/s (7.4 req/s)" with sessions."""
    rate = f"{format_number(capacity.rate_rps)} req/s"
    sessions = capacity.sessions_per_s
    return rate if sessions is None else f"{format_number(sessions)} sessions/s ({rate})"
