"""The rerun of a timing test that failed while the machine stalled (tests/machine_noise.py),
with its real timers: a test that fails once passes on its second attempt when the machine counts
as stalled, and fails at once when it does not; a test that always fails fails after three."""

from __future__ import annotations

import pytest

from tests import machine_noise

pytest_plugins = ["pytester"]

FLAKY = """
import pytest
from pathlib import Path

COUNT = Path(__file__).with_name("attempts.txt")

@pytest.mark.timing
def test_fails_once():
    attempts = int(COUNT.read_text()) + 1 if COUNT.exists() else 1
    COUNT.write_text(str(attempts))
    assert attempts > 1

@pytest.mark.timing
def test_always_fails():
    assert False

def test_unmarked_fails():
    assert False
"""

CONFTEST = """
import pytest
from tests import machine_noise
from tests.machine_noise import pytest_runtest_protocol

def pytest_configure(config):
    config.addinivalue_line("markers", "timing: a timing test")
    machine_noise.pytest_configure(config)
"""


def _run(pytester: pytest.Pytester, noisy: bool, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    # Any stall (even none) counts as the machine stalling, or none ever does.
    monkeypatch.setattr(machine_noise, "NOISY_STALL_MS", -1.0 if noisy else 1e9)
    monkeypatch.setattr(machine_noise, "NOISY_STEAL_PERCENT", 1e9)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_flaky=FLAKY)
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")


def test_a_failure_while_the_machine_stalled_is_run_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(pytester, True, monkeypatch)
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "tests run again: they failed while the machine stalled" in out
    assert "test_fails_once: attempt 1 failed while the machine stalled" in out
    assert "attempt 2 passed" in out
    assert "attempt 1 failed" in out and "attempt 3 failed" in out  # test_always_fails: three tries
    assert (pytester.path / "attempts.txt").read_text() == "2"


def test_a_failure_on_a_quiet_machine_fails_at_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(pytester, False, monkeypatch)
    result.assert_outcomes(failed=3)
    assert "tests run again" not in result.stdout.str()
    assert (pytester.path / "attempts.txt").read_text() == "1"


FIXTURED = """
import pytest
from pathlib import Path

SETUPS = []

@pytest.fixture(scope="module")
def shared():
    SETUPS.append("module")
    return object()

@pytest.mark.timing
def test_fails_once(tmp_path, shared):
    SETUPS.append(str(tmp_path))
    assert len(SETUPS) > 2

def test_after(shared):
    # Each attempt had its module fixture (a shared run would fail again as it did) and a
    # tmp_path of its own; the test after it uses the rerun's module fixture.
    assert SETUPS.count("module") == 2 and SETUPS[0] == SETUPS[2] == "module"
    assert len(set(SETUPS) - {"module"}) == 2
"""


def test_a_rerun_makes_its_module_fixtures_and_function_fixtures_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine_noise, "NOISY_STALL_MS", -1.0)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_fixtured=FIXTURED)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
