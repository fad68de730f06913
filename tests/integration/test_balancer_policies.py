"""The balancer's policies on real servers and real Locust traffic (balancer_shares.py runs them
in a gevent-patched process of its own): least_outstanding routes around a slow replica."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.cli_helpers import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timing]


def _shares(policy: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.balancer_shares", policy, "40", "4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_least_outstanding_sends_less_to_a_replica_twice_as_slow():
    # Replica 2 takes 400 ms a request, replica 1 210 ms. Round robin ignores it (half each);
    # least outstanding sees replica 2's requests pile up and sends it about its speed's share:
    # 210 / (210 + 400) ≈ 34%.
    fair = _shares("round_robin")
    around = _shares("least_outstanding")
    for run in (fair, around):
        assert run["statuses"] == {"ok": 160}
        assert run["routed"] == run["records"]  # every record names the replica it was sent to
        assert run["outstanding"] == [0, 0]  # every request's end reached the balancer
    assert fair["routed"] == {"1": 80, "2": 80}
    slow_share = around["routed"]["2"] / 160
    assert 0.25 < slow_share < 0.44
