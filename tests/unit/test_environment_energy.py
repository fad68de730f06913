"""Energy in the environments comparison: declared and measured figures kept apart and labelled,
the ranking by energy and by cost with energy, the reason lines where energy changed it, and the
scenario keys (`power:`, `recommend.by`, `price_per_kwh`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgen.environments.comparison_text import render_markdown
from loadgen.environments.energy_basis import DeclaredPower
from loadgen.environments.from_runs import load_runs
from loadgen.environments.html import render_comparison_html
from loadgen.environments.recommend import EnvironmentRun, PlanBasis, compare_environments
from loadgen.report.energy_report import not_measured
from loadgen.report.model import Report
from loadgen.report.model.energy import Energy
from loadgen.scenario.loader import ScenarioError, parse_scenario
from tests.unit.report_samples import write_report
from tests.unit.test_environments import by_name, search_report

BASIS = PlanBasis(peak_rate=60.0, target_utilization=0.8, redundancy=1)
# small: 20 req/s × 16 tokens = 320 tok/s; big: 80 req/s = 1280 tok/s (search_report's capacities).
SMALL_POWER = DeclaredPower(120.0, "notional: a small board")
BIG_POWER = DeclaredPower(200.0, "notional: a large board")


def measured(report: Report, joules_per_token: float, watts: float) -> Report:
    """`report` with energy measured at its capacity level (the figures the comparison reads)."""
    window = {
        "phase": None,
        "window_s": 10.0,
        "joules": watts * 10,
        "mean_watts": watts,
        "watts_by_device": {"gpu0": watts},
        "idle_watts": None,
        "above_idle_joules": None,
        "requests": 100.0,
        "output_tokens": watts * 10 / joules_per_token,
        "joules_per_request": watts / 10,
        "joules_per_output_token": joules_per_token,
        "above_idle_joules_per_output_token": None,
        "tokens_per_joule": 1 / joules_per_token,
    }
    section = not_measured("auto", "").model_dump() | {
        "measured": True,
        "reason": None,
        "source": "zeus 0.16.0",
        "devices": ["gpu0"],
        "measured_window": window,
        "capacity": window,
    }
    report.energy = Energy.model_validate(section)
    return report


def unmeasured(report: Report) -> Report:
    report.energy = not_measured("auto", "no NVML device, no RAPL")
    return report


def pair(
    small: Report | None = None, big: Report | None = None, *, declared: bool = True
) -> list[EnvironmentRun]:
    """small (1.0 an hour, 120 W declared) and big (4.0 an hour, 200 W declared)."""
    return [
        EnvironmentRun(
            "small", small or unmeasured(search_report(20.0)), 1.0, power=SMALL_POWER if declared else None
        ),
        EnvironmentRun(
            "big", big or unmeasured(search_report(80.0)), 4.0, power=BIG_POWER if declared else None
        ),
    ]


def test_declared_power_gives_labelled_figures_at_capacity() -> None:
    comparison = compare_environments(pair(), BASIS)
    doc = comparison.to_dict()
    rows = by_name(comparison)
    small = rows["small"]["energy"]
    # 120 W ÷ 320 tok/s = 0.375 J per token = 0.1042 kWh per million tokens.
    assert small["declared"]["joules_per_output_token"] == pytest.approx(0.375)
    assert small["declared"]["kwh_per_million_tokens"] == pytest.approx(0.375 / 3.6)
    assert small["declared"]["tokens_per_joule"] == pytest.approx(320 / 120)
    assert small["declared"]["source"] == "notional: a small board"
    assert small["measured"] is None and small["not_measured"] == "not measured (no NVML device, no RAPL)"
    assert small["basis"] == "declared" and small["kwh_per_million_tokens"] == pytest.approx(0.375 / 3.6)
    # small's plan: ceil(60 / 16) + 1 = 5 replicas × 120 W × 730 h = 438 kWh a month; no price given.
    assert rows["small"]["replicas"] == 5 and small["monthly_kwh"] == pytest.approx(438.0)
    assert small["monthly_energy_cost"] is None
    assert doc["ranking"] == {
        "by": "cost",
        "price_per_kwh": None,
        "energy_basis": "declared",
        "energy_note": "energy figures are all declared",
    }
    # By cost (the default) energy is shown, not ranked: small (5 × 1.0) beats big (2 × 4.0).
    recommendation = doc["recommendation"]
    assert recommendation["environment"] == "small" and recommendation["energy_changed_ranking"] is None
    assert recommendation["kwh_per_million_tokens"] == pytest.approx(0.1042, abs=1e-4)
    assert recommendation["energy_basis"] == "declared"
    markdown = render_markdown(comparison)
    assert "0.104 (declared)" in markdown and "0.0434 (declared)" in markdown
    assert "ranked by replica cost a month (recommend.by: cost; energy is shown, not ranked)" in markdown
    # Measured and declared side by side, never merged: 120 W ÷ 320 tok/s = 2.67 tokens per joule.
    assert (
        "| small | not measured (no NVML device, no RAPL) | – | – | 0.104 | 2.67 | 120 | "
        "notional: a small board |"
    ) in markdown


def test_ranking_by_energy_changes_the_winner_and_says_so() -> None:
    comparison = compare_environments(pair(), BASIS, by="energy")
    doc = comparison.to_dict()
    rows = by_name(comparison)
    recommendation = doc["recommendation"]
    # big: 200 W ÷ 1280 tok/s = 0.156 J per token, against small's 0.375: 140% more.
    assert recommendation["environment"] == "big" and recommendation["energy_changed_ranking"] is True
    assert rows["small"]["lost_because"] == (
        "the first by replica cost alone, but uses 140% more energy per output token: "
        "0.104 kWh per million (declared) against 0.0434 (declared)"
    )
    assert recommendation["text"].startswith("big is the most energy-efficient in 100% of resamples")
    assert recommendation["text"].endswith(
        "; 0.0434 kWh per million output tokens (declared); energy changed the ranking: by replica "
        "cost alone small would come first"
    )
    assert rows["big"]["cheapest_share"] == 1.0
    html = render_comparison_html(comparison, Path("."))
    assert "most efficient in" in html and 'data-chart="energy"' in html
    assert "energy at capacity" in html and "0.0434 (declared)" in html


def test_cost_with_energy_adds_the_energy_bill_and_needs_it_to_matter() -> None:
    cheap_power = compare_environments(pair(), BASIS, by="cost_with_energy", price_per_kwh=0.15)
    rows = by_name(cheap_power)
    # small: 3650 + 438 kWh × 0.15 = 3715.70; big: 2 × 4.0 × 730 = 5840 + 292 kWh × 0.15 = 5883.80.
    assert rows["small"]["energy"]["monthly_energy_cost"] == pytest.approx(65.7)
    assert rows["small"]["energy"]["monthly_cost_with_energy"] == pytest.approx(3715.7)
    assert rows["big"]["energy"]["monthly_cost_with_energy"] == pytest.approx(5883.8)
    assert cheap_power.to_dict()["recommendation"]["environment"] == "small"
    assert cheap_power.to_dict()["recommendation"]["energy_changed_ranking"] is False
    assert rows["big"]["lost_because"].startswith("dearer by 58% with energy: 5,883.80 a month")
    # At 20 a kWh the energy outweighs the replicas: small 3650 + 8760, big 5840 + 5840.
    dear_power = compare_environments(pair(), BASIS, by="cost_with_energy", price_per_kwh=20.0)
    assert dear_power.to_dict()["recommendation"]["environment"] == "big"
    assert dear_power.to_dict()["recommendation"]["energy_changed_ranking"] is True
    assert by_name(dear_power)["small"]["lost_because"].startswith(
        "the first by replica cost alone, but dearer by 6% with energy"
    )


def test_measured_figures_win_where_every_environment_has_them_and_stay_apart_from_declared() -> None:
    small = measured(search_report(20.0), joules_per_token=0.1, watts=32.0)
    big = measured(search_report(80.0), joules_per_token=0.2, watts=256.0)
    comparison = compare_environments(pair(small, big), BASIS, by="energy")
    doc = comparison.to_dict()
    rows = by_name(comparison)
    assert doc["ranking"]["energy_basis"] == "measured"
    # Measured, small uses half big's energy per token: the declared TDPs said the opposite.
    assert doc["recommendation"]["environment"] == "small"
    assert rows["small"]["energy"]["basis"] == "measured"
    assert rows["small"]["energy"]["measured"]["watts_per_replica"] == 32.0
    assert rows["small"]["energy"]["declared"]["watts_per_replica"] == 120.0  # kept, not merged
    assert rows["big"]["lost_because"].startswith("uses 100% more energy per output token")
    assert "(measured)" in rows["big"]["lost_because"]


def test_like_with_like_then_mixed_and_said() -> None:
    # small measured and declared, big declared only: both ranked on their declared figures.
    small = measured(search_report(20.0), joules_per_token=0.1, watts=32.0)
    like = compare_environments(pair(small), BASIS, by="energy")
    assert like.to_dict()["ranking"]["energy_basis"] == "declared"
    assert {row["energy"]["basis"] for row in like.to_dict()["environments"]} == {"declared"}
    assert like.to_dict()["recommendation"]["environment"] == "big"
    # small measured only, big declared only: mixed, and every format says so.
    runs = pair(measured(search_report(20.0), 0.1, 32.0), declared=False)
    runs[1] = EnvironmentRun("big", unmeasured(search_report(80.0)), 4.0, power=BIG_POWER)
    mixed = compare_environments(runs, BASIS, by="energy")
    assert mixed.to_dict()["ranking"]["energy_basis"] == "mixed"
    assert [by_name(mixed)[name]["energy"]["basis"] for name in ("small", "big")] == ["measured", "declared"]
    assert mixed.to_dict()["recommendation"]["environment"] == "small"
    assert "energy figures are MIXED" in render_markdown(mixed)
    assert "energy figures are MIXED" in render_comparison_html(mixed, Path("."))


def test_an_environment_without_any_figure_ranks_last_by_energy_and_says_why() -> None:
    runs = pair(declared=False)
    runs[0] = EnvironmentRun("small", unmeasured(search_report(20.0)), 1.0, power=SMALL_POWER)
    comparison = compare_environments(runs, BASIS, by="energy")
    doc = comparison.to_dict()
    assert doc["recommendation"]["environment"] == "small"
    assert by_name(comparison)["big"]["lost_because"] == (
        "no energy figure to rank by (not measured (no NVML device, no RAPL); no power: declared)"
    )
    nothing = compare_environments(pair(declared=False), BASIS)
    assert nothing.to_dict()["ranking"]["energy_basis"] is None
    assert (
        nothing.to_dict()["ranking"]["energy_note"]
        == "no energy figures: nothing measured and no power: declared"
    )


def test_declared_power_travels_through_run_json(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    write_report(folder, unmeasured(search_report(80.0)))
    environment = {"name": "big", "power": {"watts_per_replica": 200, "source": "H100 SXM TDP"}}
    (folder / "run.json").write_text(json.dumps({"environment": environment}))
    (folder / "scenario.yaml").write_text(yaml.safe_dump({"name": "big"}))
    [run] = load_runs([folder])
    assert run.power == DeclaredPower(200.0, "H100 SXM TDP")
    assert run.report is not None and run.report.energy is not None and not run.report.energy.measured


SCENARIO = """
name: e
search: {over: concurrency, levels: [1, 2]}
capacity: {peak_rate: 10}
environments:
  - {name: a, server: {kind: simulated}, power: POWER}
recommend: RECOMMEND
"""


def scenario(
    power: str = "{watts_per_replica: 350, source: H100 SXM TDP}", recommend: str = "{by: energy}"
) -> Any:
    return parse_scenario(SCENARIO.replace("POWER", power).replace("RECOMMEND", recommend), senders=1)


def test_the_scenario_keys_and_their_errors() -> None:
    loaded = scenario(recommend="{by: cost_with_energy, price_per_kwh: 0.15}")
    assert loaded.environments[0].power.watts_per_replica == 350.0
    assert (loaded.recommend.by, loaded.recommend.price_per_kwh) == ("cost_with_energy", 0.15)
    assert scenario().recommend.by == "energy"
    with pytest.raises(ScenarioError, match="give price_per_kwh too"):
        scenario(recommend="{by: cost_with_energy}")
    with pytest.raises(ScenarioError, match="source"):
        scenario(power="{watts_per_replica: 350}")
    with pytest.raises(ScenarioError, match=r"power\.watts_per_replica: must be > 0"):
        scenario(power="{watts_per_replica: 0, source: x}")
