"""Validation that holds (issue 11): finite numbers, plan bounds, hostile YAML, each error located."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import loadgen.scenario.yaml_reader as scenario_yaml
from kernel.units import parse_duration, parse_fraction, parse_growth_rate, parse_size
from loadgen.scenario.loader import ScenarioError, load_scenario, parse_scenario
from tests.cli_helpers import ROOT, loadtest_argv

SPIKE = """\
name: demo
server: {kind: simulated}
traffic:
  - kind: spike
    base_rate: 5
    spike_rate: 50
    at: 2s
    spike_duration: 1s
    duration: 10s
warmup: 1s
slo:
  ttft: {p95: 200ms}
  memory_growth: {max: 10MB/min}
"""


def _issues(text: str, senders: int | None = 1) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, senders=senders)
    return [str(issue) for issue in caught.value.issues]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("warmup: 1s", "warmup: .nan", "10:9: warmup: a duration must be a finite number"),
        ("at: 2s", "at: .nan", "7:9: traffic[0].at: a duration must be a finite number"),
        ("p95: 200ms", "p95: .nan", "12:15: slo.ttft.p95: a duration must be a finite number"),
        ("max: 10MB/min", "max: .nan", "13:24: slo.memory_growth.max: a growth rate must be a finite number"),
        ("duration: 10s", "duration: .inf", "9:15: traffic[0].duration: a duration must be a finite number"),
        ("spike_rate: 50", "spike_rate: .inf", "6:17: traffic[0].spike_rate: must be a finite number"),
        ("spike_rate: 50", "spike_rate: 1e400", "6:17: traffic[0].spike_rate: must be a finite number"),
        ("at: 2s", "at: 1e400s", "7:9: traffic[0].at: duration '1e400s' must be a finite number"),
        ("at: 2s", "at: 400d", "7:9: traffic[0].at: unknown duration unit 'd' in '400d'"),
        ("at: 2s", "at: 9999h", "7:9: traffic[0].at: a duration must be at most 366 days (3.16224e+07s)"),
    ],
)
def test_nan_and_infinity_are_refused_at_their_value(old: str, new: str, expected: str) -> None:
    assert parse_scenario(SPIKE).traffic[0].rate > 0  # the original is valid
    issues = _issues(SPIKE.replace(old, new))
    assert any(issue.startswith(f"scenario.yaml:{expected}") for issue in issues), issues


def test_units_refuse_non_finite_and_absurd_values() -> None:
    for bad in ("1e400s", "nan s", float("nan"), float("inf"), 1e300):
        with pytest.raises(ValueError):
            parse_duration(bad)
    for bad in ("1e400KB", float("inf"), 2.0**41):
        with pytest.raises(ValueError):
            parse_size(bad)
    for bad in ("nan%", "1e400%", float("nan")):
        with pytest.raises(ValueError):
            parse_fraction(bad)
    for bad in (float("nan"), "1e400MB/min", -1e300):
        with pytest.raises(ValueError):
            parse_growth_rate(bad)


PLAN = """\
name: demo
server: {kind: simulated}
traffic:
  - {kind: poisson, rate: 20, duration: 10s}
  - kind: ramp
    from_rate: 10
    to_rate: 100
    duration: 20s
"""


def test_a_plan_of_more_than_100m_requests_says_its_count() -> None:
    issues = _issues(PLAN.replace("rate: 20, duration: 10s", "rate: 1e9, duration: 1h"), senders=None)
    assert issues == [
        "scenario.yaml:4:5: traffic[0]: the traffic plans 3,600,000,001,100 requests; "
        "the limit is 100,000,000 (check rate and duration)"
    ]


def test_rates_beyond_one_process_point_at_workers_which_relax_them() -> None:
    fast = PLAN.replace("to_rate: 100", "to_rate: 2500")
    assert _issues(fast) == [
        "scenario.yaml:7:14: traffic[1].to_rate: 2500 req/s is more than one process can send "
        "(1000 req/s); use --workers 3"
    ]
    assert _issues(fast, senders=2)[0].endswith(
        "more than 2 processes can send (2000 req/s); use --workers 3"
    )
    assert parse_scenario(fast, senders=3).traffic[1].peak_rate() == (2500, "to_rate")
    assert parse_scenario(fast, senders=None) is not None  # a run folder's scenario read back
    search = "name: s\nserver: {kind: simulated}\nsearch: {over: rate, start: 100, max: 4000}\n"
    assert _issues(search, senders=8) == [
        "scenario.yaml:3:39: search.max: 4000 req/s is more than one process can send (1000 req/s); "
        "use --workers 4 (a search runs in one process)"
    ]


def test_a_trace_stretched_past_a_year_is_refused_at_time_scale() -> None:
    text = (
        "name: t\nserver: {kind: simulated}\n"
        "traffic: [{kind: trace, path: scenarios/traces/sample.jsonl, format: jsonl, time_scale: 1e9}]\n"
    )
    issues = _issues(text)
    assert len(issues) == 1 and issues[0].startswith(
        "scenario.yaml:3:89: traffic[0].time_scale: the traffic lasts"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a\nseed: 1\nname: b\n", "3:1: duplicate key 'name' (first at line 1)"),
        (
            "name: a\nslo:\n  ttft: {p95: 1s, p99: 2s, p95: 3s}\n",
            "3:28: duplicate key 'p95' (first at line 3)",
        ),
        ("name: a\nseed: 1\n'seed': 2\n", "3:1: duplicate key 'seed' (first at line 2)"),
        ("name: a\nx: {1: a, 0x1: b}\n", "2:11: duplicate key '0x1' (first at line 2)"),
    ],
)
def test_duplicate_keys_are_errors_at_the_second(text: str, expected: str) -> None:
    assert _issues(text) == [f"scenario.yaml:{expected}"]


def test_a_merge_key_may_repeat_what_it_merges() -> None:
    text = SPIKE.replace("slo:\n", "base: &b {p95: 1s}\nslo:\n").replace(
        "ttft: {p95: 200ms}", "ttft: {<<: *b, p95: 2s}"
    )
    assert any("unknown key 'base'" in issue for issue in _issues(text))  # merged fine; `base` is unknown


def test_non_utf8_bytes_are_located(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(b"name: demo\nserver: {kind: simul\xe9ted}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == f"{path}:2:21: byte 0xe9 is not UTF-8 text"


def test_control_characters_are_located_by_character() -> None:
    assert _issues("name: démo\nseed: 1\x07\n") == [
        "scenario.yaml:2:8: character U+0007 is not allowed in YAML"
    ]


def test_nesting_deeper_than_100_is_refused_where_it_crosses() -> None:
    ok_depth = "name: a\nx: " + "[" * 99 + "]" * 99 + "\n"  # the root mapping + 99 lists = 100 levels
    assert all("nested" not in issue for issue in _issues(ok_depth))
    assert _issues("name: a\nx: " + "[" * 600 + "]" * 600 + "\n") == [
        "scenario.yaml:2:103: nested deeper than 100 levels"
    ]


def test_a_huge_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    with path.open("wb") as file:
        file.truncate(50 * 1024**2)  # 50 MB (sparse)
    for huge in (path, Path("/dev/zero")):
        started = time.perf_counter()
        with pytest.raises(ScenarioError, match=r":1:1048577: a scenario may be at most 1024 KB"):
            load_scenario(huge)
        assert time.perf_counter() - started < 1.0


def test_alias_bombs_and_loops_are_refused_quickly() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
    )
    started = time.perf_counter()
    issues = _issues("name: x\n" + bomb)
    assert time.perf_counter() - started < 1.0
    assert issues == ["scenario.yaml:6:4: more than 100,000 values once aliases are expanded"]
    assert _issues("name: x\nserver: &s [*s]\n") == [
        "scenario.yaml:2:9: an alias inside its own anchor (a loop)"
    ]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("2024-13-45", "cannot read this value: month must be in 1..12"),
        ("9" * 5000, "cannot read this value: Exceeds the limit (4300 digits)"),
        ("!!timestamp x", "cannot read this value:"),
    ],
)
def test_values_pyyaml_cannot_build_are_located(value: str, reason: str) -> None:
    issues = _issues(f"name: a\nseed: {value}\n")
    assert len(issues) == 1 and issues[0].startswith(f"scenario.yaml:2:7: {reason}"), issues


def test_the_document_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    original = scenario_yaml._Loader.__init__

    def counting(self: scenario_yaml._Loader, stream: str) -> None:
        made.append(stream)
        original(self, stream)

    monkeypatch.setattr(scenario_yaml._Loader, "__init__", counting)
    monkeypatch.setattr("yaml.compose", None)  # the old second parse is gone
    monkeypatch.setattr("yaml.safe_load", None)
    parse_scenario(SPIKE)
    with pytest.raises(ScenarioError):
        parse_scenario(SPIKE.replace("at: 2s", "at: -2s"))
    assert made == [SPIKE, SPIKE.replace("at: 2s", "at: -2s")]


def test_union_errors_name_the_member_that_fits_the_value() -> None:
    text = (
        "name: x\nserver: {kind: simulated}\nsearch: {over: rate, max: 10}\n"
        "capacity:\n  peak_rate: {trace: t.csv}\nverify:\n  duration: -1\n"
    )
    assert _issues(text) == [
        "scenario.yaml:5:14: capacity.peak_rate.from_trace: required key is missing",
        "scenario.yaml:5:15: capacity.peak_rate.trace: unknown key 'trace'; did you mean 'from_trace'?",
        "scenario.yaml:7:13: verify.duration: a duration cannot be negative",
    ]


def test_without_libyaml_the_same_errors() -> None:
    """PyYAML built without libyaml: the pure-Python events give the same located errors."""
    code = (
        "import sys; sys.modules['yaml._yaml'] = None\n"
        "from loadgen.scenario.loader import parse_scenario, ScenarioError\n"
        "import loadgen.scenario.yaml_reader as y; assert y._EventSource.__module__ != 'yaml._yaml'\n"
        "deep = 'name: a\\nx: ' + '[' * 600 + ']' * 600\n"
        "for text in [deep, 'name: a\\nname: b', 'name: d\\xe9mo\\nseed: 1\\x07']:\n"
        "    try: parse_scenario(text)\n"
        "    except ScenarioError as e: print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == [
        "scenario.yaml:2:103: nested deeper than 100 levels",
        "scenario.yaml:2:1: duplicate key 'name' (first at line 1)",
        "scenario.yaml:2:8: character U+0007 is not allowed in YAML",
    ], done.stderr


def test_cli_validate_counts_workers(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(PLAN.replace("to_rate: 100", "to_rate: 2500"))
    one = subprocess.run(loadtest_argv("validate", str(path)), cwd=ROOT, capture_output=True, text=True)
    three = subprocess.run(
        loadtest_argv("validate", str(path), "--workers", "3"), cwd=ROOT, capture_output=True, text=True
    )
    assert (one.returncode, one.stdout) == (2, "")
    assert (
        one.stderr == f"{path}:7:14: traffic[1].to_rate: 2500 req/s is more than one process can send "
        "(1000 req/s); use --workers 3\n"
    )
    assert (three.returncode, three.stdout, three.stderr) == (0, "OK\n", "")
