"""`workload.images` in the scenario and the plan: the key's shapes and errors; image counts drawn
from their own streams (the rest of the plan unchanged, bit for bit), lazily in chunks exactly as
one whole draw, at the configured distribution; a search level's requests get theirs too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from loadgen.distributed import plan_wire
from loadgen.features.images.draws import image_entropy
from loadgen.features.images.key import SPEC
from loadgen.scenario.distributions import sample
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.traffic.level_behaviour import LevelBehaviour
from loadgen.traffic.schedule import CHUNK, PlannedRequest, build_schedule
from tests.unit.eager_schedule import eager_schedule

MIXED = """
name: images
seed: 5
server: {kind: simulated}
workload:
  - class: vision
    weight: 2
    prompt_tokens: {kind: uniform, min: 16, max: 64}
    images: {count: {kind: uniform, min: 0, max: 3}, width: 32, height: 16}
  - class: heavy
    weight: 1
    images: {count: {kind: lognormal, mean: 4, sigma: 0.5}, format: jpeg}
  - class: plain
    weight: 1
traffic:
  - {kind: poisson, rate: 60, duration: 5s}
  - {kind: gamma, rate: 40, cv: 2, duration: 5s}
warmup: 1s
"""


def _one(images: str, extra: str = "") -> str:
    return (
        "name: s\nserver: {kind: simulated}\n"
        f"workload:\n  stream: true\n  images: {images}\n{extra}"
        "traffic: [{kind: constant, rate: 5, duration: 2s}]\n"
    )


def _issues(text: str, base_dir: Path | None = None) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml", base_dir=base_dir)
    return [str(issue) for issue in caught.value.issues]


def test_the_key_parses_with_its_defaults() -> None:
    spec = SPEC.of(parse_scenario(_one("{count: {kind: fixed, value: 2}}")).workload)
    assert spec is not None
    assert (spec.count.kind, spec.width, spec.height, spec.format, spec.folder) == (
        "fixed",
        512,
        512,
        "png",
        None,
    )


@pytest.mark.parametrize(
    ("images", "expected"),
    [
        ("{count: {kind: fixed, value: -1}}", "count.value: must be >= 0"),
        ("{count: {kind: fixed, value: 101}}", "count.value: must be <= 100"),
        ("{count: {kind: uniform, min: 3, max: 1}}", "max must be >= min"),
        ("{count: {kind: fixed, value: 1}, width: 0}", "width: must be >= 1"),
        ("{count: {kind: fixed, value: 1}, format: gif}", "'png' or 'jpeg'"),
        ("{count: {kind: fixed, value: 1}, size: 5}", "size"),
        ("{width: 5}", "count"),
    ],
)
def test_a_bad_images_key_is_refused_where_it_was_written(images: str, expected: str) -> None:
    issues = _issues(_one(images))
    assert len(issues) == 1 and issues[0].startswith("s.yaml:5:") and expected in issues[0], issues
    assert "workload.images" in issues[0]


def test_images_need_chat_and_no_sessions() -> None:
    issues = _issues(_one("{count: {kind: fixed, value: 1}}", "  api: completions\n"))
    assert len(issues) == 1 and "workload.images: images need api: chat" in issues[0], issues
    sessions = "  sessions: {turns: {kind: fixed, value: 2}, think_time: {kind: fixed, value: 1s}}\n"
    issues = _issues(_one("{count: {kind: fixed, value: 1}}", sessions))
    assert len(issues) == 1 and "images are not sent with sessions" in issues[0], issues


def test_a_folder_is_checked_when_the_scenario_loads(tmp_path: Path) -> None:
    issues = _issues(_one("{count: {kind: fixed, value: 1}, folder: photos}"), tmp_path)
    assert len(issues) == 1 and "folder photos: no such folder" in issues[0], issues
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "notes.txt").write_text("not an image")
    issues = _issues(_one("{count: {kind: fixed, value: 1}, folder: photos}"), tmp_path)
    assert len(issues) == 1 and "folder photos: no image files (.gif, .jpeg" in issues[0], issues
    (tmp_path / "photos" / "a.PNG").write_bytes(b"\x89PNG")
    scenario = parse_scenario(_one("{count: {kind: fixed, value: 1}, folder: photos}"), base_dir=tmp_path)
    spec = SPEC.of(scenario.workload)
    assert spec is not None
    assert spec.folder == str((tmp_path / "photos").resolve())  # absolute: reloads


def test_adding_images_moves_nothing_else_of_the_plan() -> None:
    """Strip the counts and the plan is the one of the same scenario without `images:`, the
    eager planner's, request by request (times bit for bit)."""
    plain = parse_scenario("\n".join(line for line in MIXED.splitlines() if "images:" not in line))
    plain_plan = list(build_schedule(plain).requests)
    assert plain_plan == eager_schedule(plain).requests
    assert all(r.drawn.get("images", 0) == 0 for r in plain_plan)
    lazy = list(build_schedule(parse_scenario(MIXED), chunk=97).requests)
    assert any(r.drawn.get("images") for r in lazy)
    assert [dataclasses.replace(r, drawn={}) for r in lazy] == plain_plan


def _eager_counts(scenario: Scenario, requests: list[PlannedRequest]) -> list[int]:
    """The oracle: each class's counts in one draw of its stream."""
    names = [name for name, _, _ in scenario.classes]
    indices = np.array([names.index(r.request_class) for r in requests])
    out = np.zeros(len(requests), dtype=int)
    for index, (_, _, workload) in enumerate(scenario.classes):
        spec = SPEC.of(workload)
        if spec is None:
            continue
        mine = np.flatnonzero(indices == index)
        rng = np.random.default_rng([*image_entropy(scenario.seed), index])
        out[mine] = sample(spec.count, len(mine), rng)
    return out.tolist()


@pytest.mark.parametrize("chunk", [1, 7, 200, CHUNK])
def test_the_lazy_counts_are_one_whole_draw_whatever_the_chunk(chunk: int) -> None:
    scenario = parse_scenario(MIXED)
    requests = list(build_schedule(scenario, chunk=chunk).requests)
    assert [r.drawn.get("images", 0) for r in requests] == _eager_counts(scenario, requests)


def test_the_counts_follow_their_distribution() -> None:
    many = MIXED.replace("rate: 60, duration: 5s", "rate: 3000, duration: 5s")
    requests = list(build_schedule(parse_scenario(many)).requests)
    assert all(r.drawn.get("images", 0) == 0 for r in requests if r.request_class == "plain")
    vision = np.array([r.drawn.get("images", 0) for r in requests if r.request_class == "vision"])
    assert set(vision.tolist()) == {0, 1, 2, 3}  # uniform 0..3, zero included
    assert abs(vision.mean() - 1.5) < 4 * np.sqrt(1.25 / vision.size)
    heavy = np.array([r.drawn.get("images", 0) for r in requests if r.request_class == "heavy"])
    assert heavy.min() >= 0 and heavy.max() <= 100 and abs(heavy.mean() - 4) < 0.15
    other = parse_scenario(many.replace("seed: 5", "seed: 6"))
    assert [r.drawn.get("images", 0) for r in build_schedule(other).requests] != [
        r.drawn.get("images", 0) for r in requests
    ]


def test_the_counts_travel_to_workers() -> None:
    requests = list(build_schedule(parse_scenario(MIXED)).requests)
    assert plan_wire.decode_requests(plan_wire.encode_requests(requests)) == requests


def test_a_search_level_draws_its_counts_from_its_own_stream() -> None:
    scenario = parse_scenario(MIXED)
    planned = [PlannedRequest(i, 0, 0.0, 8, 4, False, request_class="vision") for i in range(400)]
    once = LevelBehaviour(scenario.workload, scenario.seed, 3).apply(planned)
    again = LevelBehaviour(scenario.workload, scenario.seed, 3)
    assert again.active
    in_blocks = again.apply(planned[:150]) + again.apply(planned[150:])
    assert [r.drawn.get("images", 0) for r in once] == [r.drawn.get("images", 0) for r in in_blocks]
    assert {r.drawn.get("images", 0) for r in once} == {0, 1, 2, 3}
    other = LevelBehaviour(scenario.workload, scenario.seed, 4).apply(planned)
    assert [r.drawn.get("images", 0) for r in other] != [r.drawn.get("images", 0) for r in once]
