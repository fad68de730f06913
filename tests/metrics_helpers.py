"""Reading a live /metrics endpoint from tests: fetch its samples, or see that its port is closed."""

from __future__ import annotations

import socket
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = list[tuple[str, dict[str, str], float]]  # (sample name, labels, value)


def fetch(port: int) -> Samples | None:
    """Every sample served on 127.0.0.1:port/metrics; None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None
    families = text_string_to_metric_families(text)
    return [(s.name, s.labels, s.value) for family in families for s in family.samples]


def refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except ConnectionRefusedError:
        return True
