"""`loadtest run --target URL ...`: the flags build the Scenario a file does, through its own
validation, and each bad flag is one line naming it; `--print-scenario` and `loadtest init`
write what loads back to that same Scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.cli.main import main
from loadgen.evaluate.curve import Over
from loadgen.scenario.loader import parse_scenario
from loadgen.scenario.mode import SearchMode
from loadgen.scenario.model import Scenario
from loadgen.scenario.phases import PoissonPhase
from loadgen.scenario.workload import FixedLength, UniformLength
from servers.external import ExternalServerConfig
from tests.cli_helpers import ROOT

URL = "http://127.0.0.1:8000"
DATASET = ROOT / "scenarios" / "datasets" / "prompts.jsonl"


def printed(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    """`loadtest run --target URL FLAGS --print-scenario`: its stdout (exit 0 asserted)."""
    code = main(["run", "--target", URL, *flags, "--print-scenario"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def from_flags(capsys: pytest.CaptureFixture[str], *flags: str) -> Scenario:
    return parse_scenario(printed(capsys, *flags))


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The command's stderr lines, exit 2 and nothing on stdout asserted."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    return err.strip().splitlines()


def test_the_common_flags_make_the_scenario_the_same_file_does(capsys: pytest.CaptureFixture[str]) -> None:
    flags = (
        *("--rate", "5", "--duration", "3s", "--warmup", "1s", "--model", "tiny", "--api", "completions"),
        *("--prompt-tokens", "32", "--output-tokens", "16-48", "--seed", "9", "--name", "smoke"),
        *("--slo", "ttft.p95=500ms", "--slo", "error_rate.max=1%"),
    )
    scenario = from_flags(capsys, *flags)
    assert scenario.name == "smoke" and scenario.seed == 9
    server = scenario.server_config
    assert isinstance(server, ExternalServerConfig) and (server.url, server.model) == (URL, "tiny")
    [phase] = scenario.traffic
    assert isinstance(phase, PoissonPhase) and (phase.rate, phase.duration) == (5, 3.0)
    assert scenario.warmup == 1.0
    workload = scenario.workload
    assert workload.api == "completions"
    assert workload.prompt_tokens == FixedLength(kind="fixed", value=32)
    assert workload.output_tokens == UniformLength(kind="uniform", min=16, max=48)
    assert scenario.slo.ttft is not None and scenario.slo.ttft.p95 == 0.5
    assert scenario.slo.error_rate is not None and scenario.slo.error_rate.max == 0.01
    written = f"""
name: smoke
seed: 9
server: {{kind: external, url: "{URL}", model: tiny}}
workload:
  api: completions
  prompt_tokens: {{kind: fixed, value: 32}}
  output_tokens: {{kind: uniform, min: 16, max: 48}}
traffic: [{{kind: poisson, rate: 5, duration: 3s}}]
warmup: 1s
slo: {{ttft: {{p95: 500ms}}, error_rate: {{max: 1%}}}}
"""
    assert scenario == parse_scenario(written)


def test_bare_target_defaults_to_one_request_a_second_for_30_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scenario = from_flags(capsys)
    server = scenario.server_config
    assert scenario.name == "cli" and isinstance(server, ExternalServerConfig)
    assert server.model is None  # the adapter asks the target's /v1/models when it starts
    assert [(phase.kind, phase.rate, phase.duration) for phase in scenario.traffic] == [("poisson", 1, 30.0)]


def test_concurrency_is_one_closed_loop_level_of_that_many_users(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = from_flags(capsys, "--concurrency", "4", "--duration", "8s")
    assert isinstance(scenario.mode, SearchMode) and not scenario.traffic
    search = scenario.mode.search
    assert (search.over, search.levels, search.start, search.max) == (Over.CONCURRENCY, (4,), 4, 4)
    assert search.precision is None and search.trials == 1  # one trial, judged as measured
    assert (search.level_duration, search.level_warmup) == (8.0, 2.0)  # a quarter of the level


def test_sweep_is_the_capacity_search(capsys: pytest.CaptureFixture[str]) -> None:
    adaptive = from_flags(capsys, "--sweep")
    assert isinstance(adaptive.mode, SearchMode)
    assert (adaptive.mode.search.over, adaptive.mode.search.levels) == (Over.CONCURRENCY, None)
    by_rate = from_flags(capsys, "--sweep", "rate", "--duration", "10s", "--warmup", "3s")
    assert isinstance(by_rate.mode, SearchMode)
    search = by_rate.mode.search
    assert (search.over, search.level_duration, search.level_warmup) == (Over.RATE, 10.0, 3.0)


def test_dataset_flag_reads_the_prompts(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = from_flags(capsys, "--dataset", str(DATASET))
    assert scenario.workload.dataset == str(DATASET) and len(scenario.workload.entries) > 0


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--rate", "0"], "--rate: must be > 0"),
        (["--rate", "fast"], "--rate: must be a number"),
        (["--output-tokens", "x"], "--output-tokens: must be a whole number"),
        (["--concurrency", "0"], "--concurrency: must be > 0"),
        (
            ["--concurrency", "2.5"],
            "--concurrency: concurrency levels (start, max, levels) must be whole numbers",
        ),
        (["--duration=2s", "--warmup", "3s"], "--warmup: warmup (3s) must be shorter than the traffic (2s)"),
        (["--slo", "ttft.p95=soon"], "--slo ttft.p95=soon: duration 'soon' is not a number with a unit"),
        (["--slo", "ttft"], "--slo ttft: give KEY.PATH=VALUE (e.g. ttft.p95=500ms)"),
        (["--seed", "-1"], "--seed: must be >= 0"),
        (["--name", "Big Run"], "--name: must match ^[a-z0-9_-]+$"),
        (["--api", "chatt"], "--api: must be one of 'chat', 'completions'"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], flags: list[str], line: str
) -> None:
    [error] = refused(capsys, "run", "--target", URL, *flags)
    assert error.startswith(f"loadtest run: error: {line}"), error


def test_a_bad_target_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    [error] = refused(capsys, "run", "--target", "ftp://host")
    assert error == "loadtest run: error: --target: url 'ftp://host' must be an http:// or https:// URL"


def test_flags_beside_a_file_and_no_scenario_at_all_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    [both] = refused(capsys, "run", str(ROOT / "scenarios" / "external.yaml"), "--rate", "4")
    assert both.startswith(
        "loadtest run: error: --rate: give a scenario FILE or --target with flags, not both"
    )
    [neither] = refused(capsys, "run")
    assert (
        neither
        == "loadtest run: error: give a scenario FILE, or --target URL (a server already running) with flags"
    )


def test_print_scenario_prints_yaml_that_loads_to_the_same_scenario(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ("--rate", "7", "--slo", "e2e.p99=2s", "--set", "traffic.0.max_concurrency=16")
    scenario = from_flags(capsys, *flags)
    assert scenario.traffic[0].max_concurrency == 16
    assert scenario.slo.e2e is not None and scenario.slo.e2e.p99 == 2.0


@pytest.mark.parametrize(
    "flags",
    [
        ["--rate", "5", "--slo", "ttft.p95=500ms", "--seed", "3"],
        ["--sweep", "rate", "--model", "m", "--prompt-tokens", "32-64", "--api", "completions"],
        ["--concurrency", "8", "--duration", "1m", "--dataset", str(DATASET), "--output-tokens", "16"],
    ],
)
def test_init_writes_a_commented_file_that_loads_to_the_same_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str]
) -> None:
    assert main(["init", "--target", URL, *flags]) == 0
    text, _ = capsys.readouterr()
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert len(comments) >= 5  # a note per section, and the keys most often added next
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    capsys.readouterr()
    assert parse_scenario(text) == from_flags(capsys, *flags)


def test_init_refuses_bad_flags_as_run_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(capsys, "init", "--target", URL, "--rate", "-2") == [
        "loadtest init: error: --rate: must be > 0"
    ]


def test_validate_takes_the_flags_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--target", URL, "--concurrency", "4"]) == 0
    assert capsys.readouterr().out == "OK\n"
    assert refused(capsys, "validate", "--target", URL, "--concurrency", "4", "--set", "search.max=lots") == [
        "loadtest validate: error: --set search.max=lots: must be a number"
    ]
