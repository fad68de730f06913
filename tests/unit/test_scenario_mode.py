"""The run mode (loadgen.scenario.mode) read from a scenario's sections, and what `Over` knows."""

from __future__ import annotations

import json

import pytest

from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow
from loadgen.scenario.loader import parse_scenario
from loadgen.scenario.mode import CapacityMode, PhasesMode, SearchMode, VerifyMode

BASE = "name: mode\nserver: {kind: simulated}\n"
SEARCH = "search: {over: rate, start: 5, max: 80, level_duration: 10s, level_warmup: 2s}\n"


def test_phases_mode_holds_the_phases() -> None:
    scenario = parse_scenario(
        BASE + "traffic: [{kind: poisson, rate: 5, duration: 5s}, {kind: constant, rate: 2, duration: 3s}]\n"
    )
    mode = scenario.mode
    assert isinstance(mode, PhasesMode) and not isinstance(mode, SearchMode)
    assert [phase.duration for phase in mode.phases] == [5.0, 3.0]


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        ("", SearchMode),
        ("capacity: {peak_rate: 120}\n", CapacityMode),
        ("capacity: {peak_rate: 120}\nverify: false\n", CapacityMode),
        ("capacity: {peak_rate: 120}\nverify: true\n", VerifyMode),
        ("capacity: {peak_rate: 120}\nverify: {duration: 30s}\n", VerifyMode),
    ],
)
def test_each_search_section_extends_the_mode(sections: str, expected: type) -> None:
    mode = parse_scenario(BASE + SEARCH + sections).mode
    assert type(mode) is expected and isinstance(mode, SearchMode)
    assert mode.search.max == 80 and mode.over is Over.RATE
    if isinstance(mode, CapacityMode):
        assert mode.capacity.peak_rate == 120
    if isinstance(mode, VerifyMode):
        assert mode.verify.one_fewer and mode.verify.duration in (None, 30.0)


def test_the_mode_follows_a_copy_of_the_scenario() -> None:
    """Computed from the sections on each read: an environment's copy (new capacity) is seen."""
    scenario = parse_scenario(BASE + SEARCH + "capacity: {peak_rate: 120}\n")
    assert scenario.capacity is not None
    copy = scenario.model_copy(update={"capacity": scenario.capacity.model_copy(update={"redundancy": 3})})
    assert isinstance(copy.mode, CapacityMode) and copy.mode.capacity.redundancy == 3


def test_over_knows_its_unit_and_loop() -> None:
    assert Over.CONCURRENCY.closed_loop and not Over.RATE.closed_loop
    assert Over.CONCURRENCY.unit() == Over.CONCURRENCY.unit(sessions=True) == "users"
    assert (Over.RATE.unit(), Over.RATE.unit(sessions=True)) == ("req/s", "sessions/s")
    # YAML and JSON keep the plain word, and it reads back as the type.
    assert (
        parse_scenario(BASE + "search: {over: concurrency}\n").model_dump(mode="json")["search"]["over"]
        == "concurrency"
    )
    window = LevelWindow(0, 4, Over.CONCURRENCY, 1.0, 2.0, None)
    again = LevelWindow.from_dict(json.loads(json.dumps(window.to_dict())))
    assert again.over is Over.CONCURRENCY and again == window
