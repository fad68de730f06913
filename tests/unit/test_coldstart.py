"""Cold starts over `cold_starts: N`: the summary in server.cold_start_s and the SLO on its max."""

from __future__ import annotations

import pytest

from loadgen.collect.coldstart import ColdStart, summarize_cold_starts
from loadgen.evaluate.slo import SLOSpec, check_slos
from loadgen.scenario.model import Scenario

SPEC = SLOSpec.model_validate({"cold_start": {"max": "3s"}})


def test_summary_keeps_every_start_and_reports_the_first_p50_and_max() -> None:
    starts = [ColdStart(2.01, 2.07), ColdStart(2.05, 3.40), ColdStart(2.03, 2.09)]
    summary = summarize_cold_starts(starts)
    assert (summary["ready"], summary["first_token"]) == (2.01, 2.07)  # the first (coldest) start
    assert summary["samples"] == [
        {"ready": 2.01, "first_token": 2.07},
        {"ready": 2.05, "first_token": 3.40},
        {"ready": 2.03, "first_token": 2.09},
    ]
    assert summary["p50"] == 2.09 and summary["max"] == 3.40  # of first_token
    assert summarize_cold_starts(starts[:2])["p50"] == pytest.approx(2.735)  # even count: midpoint


def test_summary_falls_back_to_ready_and_is_null_without_a_spawn() -> None:
    ready_only = summarize_cold_starts([ColdStart(1.5, None), ColdStart(2.5, None)])
    assert (ready_only["p50"], ready_only["max"]) == (2.0, 2.5)
    nothing = summarize_cold_starts([])
    assert nothing == {"ready": None, "first_token": None, "samples": [], "p50": None, "max": None}


def test_slo_gates_on_the_worst_start() -> None:
    cold = summarize_cold_starts([ColdStart(2.0, 2.1), ColdStart(2.0, 3.2)])
    [result] = check_slos(SPEC, {}, {"cold_start_s": cold})
    assert not result.passed and result.observed == 3.2  # the first start alone would pass
    assert result.note == "worst of 2 starts"
    [single] = check_slos(SPEC, {}, {"cold_start_s": summarize_cold_starts([ColdStart(2.0, 2.1)])})
    assert single.passed and single.observed == 2.1 and single.note is None


def test_slo_on_ready_only_starts_says_so() -> None:
    cold = summarize_cold_starts([ColdStart(1.0, None), ColdStart(4.0, None)])
    [result] = check_slos(SPEC, {}, {"cold_start_s": cold})
    assert not result.passed and result.observed == 4.0
    assert result.note == "spawn → ready (no first-token time); worst of 2 starts"
    [unmeasured] = check_slos(SPEC, {}, {"cold_start_s": summarize_cold_starts([])})
    assert not unmeasured.passed and unmeasured.note == "not measured"


def test_cold_starts_key_defaults_to_one_and_must_be_positive() -> None:
    base = {
        "name": "x",
        "server": {"kind": "simulated"},
        "traffic": [{"kind": "constant", "rate": 1, "duration": 1}],
    }
    assert Scenario.model_validate(base).cold_starts == 1
    assert Scenario.model_validate({**base, "cold_starts": 3}).cold_starts == 3
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Scenario.model_validate({**base, "cold_starts": 0})
