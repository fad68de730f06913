"""Timing tests judged against the machine they ran on (a pytest plugin; tests/conftest.py).

A `timing` or `slow` test measures latencies and send times on this machine, and a shared host
takes its cores now and then: a CI runner stole 17-31% of them during one run, in slices of up
to 31 ms, and four tests that pass on a quiet machine failed. The product tells such a machine's
stalls from the client's with a reference timer (loadgen.collect.machine_watch); so do the tests:
one timer per core runs through each attempt of such a test, and an attempt that fails while the
machine stalled (a stall of NOISY_STALL_MS or more, or NOISY_STEAL_PERCENT of steal over at least
STEAL_MIN_S: /proc/stat counts in 10-ms ticks, too coarse for less) is run again, at most
RERUNS times, its module's fixtures made again. An attempt that fails on a quiet machine fails
the test at once: a test that fails by itself is never retried, and every rerun is listed at the
end with what the timers saw, so a machine that is always noisy shows.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from _pytest.runner import call_and_report

from loadgen.collect.machine_watch import MachineStalls, MachineWatch

RERUNS = 2
NOISY_STALL_MS = 10.0
NOISY_STEAL_PERCENT = 2.0
STEAL_MIN_S = 2.0
PROPERTY = "machine_reruns"
MARKERS = ("timing", "slow")


@dataclass(frozen=True)
class Noise:
    """What the timers (one a core) saw during one attempt."""

    count: int
    max_ms: float
    steal_percent: float | None
    seconds: float

    @property
    def noisy(self) -> bool:
        stolen = self.seconds >= STEAL_MIN_S and (self.steal_percent or 0.0) >= NOISY_STEAL_PERCENT
        return self.max_ms >= NOISY_STALL_MS or stolen

    def words(self) -> str:
        steal = "?" if self.steal_percent is None else f"{self.steal_percent:.1f}%"
        return f"the machine stalled {self.count} times, up to {self.max_ms:.1f} ms (steal {steal})"


def _noise(results: list[MachineStalls], seconds: float) -> Noise:
    steals = [result.steal_percent for result in results if result.steal_percent is not None]
    return Noise(
        count=sum(result.count for result in results),
        max_ms=max((result.max_ms for result in results), default=0.0),
        steal_percent=max(steals) if steals else None,
        seconds=seconds,
    )


@contextmanager
def watched() -> Iterator[list[Noise]]:
    """The timers run through the block; the list it yields holds their Noise afterwards."""
    seen: list[Noise] = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="machine-noise-") as folder:
        watches = [
            watch
            for core in sorted(os.sched_getaffinity(0))
            if (watch := MachineWatch.start([core], Path(folder) / f"core{core}.txt")) is not None
        ]
        try:
            yield seen
        finally:
            seen.append(_noise([watch.stop() for watch in watches], time.monotonic() - began))


def _attempt(item: pytest.Item) -> tuple[list[pytest.TestReport], Noise, bool]:
    """One setup-call run of `item` under the timers; its teardown is left to the caller unless
    setup failed (nothing to retry then). Returns the reports, the noise, and whether to retry."""
    if isinstance(item, pytest.Function) and not item._request:
        item._initrequest()  # a rerun: pytest's own runtestprotocol does the same
    with watched() as seen:
        reports = [call_and_report(item, "setup", log=False)]
        if reports[0].passed:
            reports.append(call_and_report(item, "call", log=False))
    noise = seen[0]
    retry = reports[0].passed and reports[-1].failed and noise.noisy
    return reports, noise, retry


def _teardown(item: pytest.Item, nextitem: pytest.Item | pytest.Collector | None) -> pytest.TestReport:
    """The item's teardown down to what `nextitem` shares with it (before a rerun, the session:
    the item's own, its class's and its module's fixtures go and are made again, since a module
    fixture is often the measurement itself, one run the module's tests read, and would fail the
    same way; the session's stay)."""
    if item.session.shouldfail or item.session.shouldstop:
        nextitem = None
    try:
        return call_and_report(item, "teardown", log=False, nextitem=nextitem)
    finally:
        if hasattr(item, "_request"):
            item._request = False
            item.funcargs = None  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not any(item.get_closest_marker(name) for name in MARKERS):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    failures: list[str] = []
    for attempt in range(1, RERUNS + 2):
        reports, noise, retry = _attempt(item)
        if retry and attempt <= RERUNS:
            failures.append(f"attempt {attempt} failed while {noise.words()}")
            _teardown(item, item.session)
            continue
        reports.append(_teardown(item, nextitem))
        break
    if failures:
        outcome = "passed" if all(not report.failed for report in reports) else "failed"
        said = f"{'; '.join(failures)}; attempt {attempt} {outcome} ({noise.words()})"
        for report in reports:
            report.user_properties.append((PROPERTY, said))
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


class _Listing:
    """Each rerun test with what its attempts saw, listed at the end of the session. Reports come
    here where the terminal is (also from xdist's workers, whose reports carry the property)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY and report.when == "call":
                self.seen[report.nodeid] = str(value)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seen:
            return
        terminalreporter.section("tests run again: they failed while the machine stalled")
        for nodeid, said in sorted(self.seen.items()):
            terminalreporter.write_line(f"{nodeid}: {said}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Listing(), "machine-noise-listing")
