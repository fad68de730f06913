"""The one distribution family (loadgen.scenario.distributions): each quantity's models, bounds
and seeded draws. The expected draws were captured from the per-quantity classes and samplers
this family replaced: the same seed must plan the same requests."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from loadgen.features.cancel.spec import CancelTokens
from loadgen.features.images.spec import ImageCount
from loadgen.features.sessions.spec import Turns
from loadgen.scenario.distributions import Fixed, Normal, sample
from loadgen.scenario.durations import DurationDistribution
from loadgen.scenario.follow_ups import MAX_TURNS
from loadgen.scenario.lengths import MAX_TOKENS, Length

COUNT_SPECS: list[dict[str, Any]] = [
    {"kind": "fixed", "value": 7},
    {"kind": "uniform", "min": 3, "max": 9},
    {"kind": "normal", "mean": 3, "std": 4},
    {"kind": "lognormal", "mean": 100, "sigma": 0.8},
]
# Seed 42, six draws each, as the replaced samplers drew them.
COUNT_DRAWS = [
    [7, 7, 7, 7, 7, 7],
    [3, 8, 7, 6, 6, 9],
    [4, 1, 6, 7, 1, 1],
    [93, 32, 132, 154, 15, 26],
]
IMAGE_DRAWS = [  # 0..100: a normal's negatives are 0, the lognormal's tail is cut at 100
    [7, 7, 7, 7, 7, 7],
    [3, 8, 7, 6, 6, 9],
    [4, 0, 6, 7, 0, 0],
    [93, 32, 100, 100, 15, 26],
]
DURATION_SPECS: list[dict[str, Any]] = [
    {"kind": "fixed", "value": "250ms"},
    {"kind": "uniform", "min": 0.1, "max": "2s"},
    {"kind": "normal", "mean": 1, "std": 2},
    {"kind": "lognormal", "mean": "1s", "sigma": 0.5},
]
DURATION_DRAWS = [
    [0.25] * 6,
    [
        1.5705164922563304,
        0.9338690355288993,
        1.7313360478316266,
        1.4249992552127915,
        0.2789369609865341,
        1.9536824681098364,
    ],
    [1.6094341595088628, 0.0, 2.5009023916129145, 2.8811294327824277, 0.0, 0.0],
    [
        1.0277362211317391,
        0.5246667115532925,
        1.2843151228067562,
        1.41238866288515,
        0.33269883609459894,
        0.46020200093080765,
    ],
]


def _draw(annotation: Any, spec: dict[str, Any]) -> list[Any]:
    values = sample(TypeAdapter(annotation).validate_python(spec), 6, np.random.default_rng(42))
    drawn: list[Any] = values.tolist()
    return drawn


@pytest.mark.parametrize("annotation", [Length, Turns, CancelTokens])
@pytest.mark.parametrize(("spec", "expected"), list(zip(COUNT_SPECS, COUNT_DRAWS, strict=True)))
def test_count_draws_are_those_of_the_replaced_samplers(
    annotation: Any, spec: dict[str, Any], expected: list[int]
) -> None:
    assert _draw(annotation, spec) == expected


@pytest.mark.parametrize(("spec", "expected"), list(zip(COUNT_SPECS, IMAGE_DRAWS, strict=True)))
def test_image_counts_reach_zero_and_stop_at_their_maximum(spec: dict[str, Any], expected: list[int]) -> None:
    assert _draw(ImageCount, spec) == expected


@pytest.mark.parametrize(("spec", "expected"), list(zip(DURATION_SPECS, DURATION_DRAWS, strict=True)))
def test_duration_draws_are_those_of_the_replaced_sampler(
    spec: dict[str, Any], expected: list[float]
) -> None:
    assert _draw(DurationDistribution, spec) == expected


def test_draws_are_clipped_to_each_familys_own_bounds() -> None:
    wide = {"kind": "lognormal", "mean": 900, "sigma": 3}
    turns = sample(TypeAdapter(Turns).validate_python(wide), 2000, np.random.default_rng(5))
    assert turns.min() >= 1 and turns.max() == MAX_TURNS
    huge = {"kind": "lognormal", "mean": MAX_TOKENS, "sigma": 4}
    lengths = sample(TypeAdapter(Length).validate_python(huge), 2000, np.random.default_rng(5))
    assert lengths.max() == MAX_TOKENS and lengths.dtype == np.int64


def test_each_family_has_its_own_named_models_and_bounds() -> None:
    turns = TypeAdapter(Turns).validate_python({"kind": "uniform", "min": 2, "max": 6})
    assert type(turns).__name__ == "UniformTurns"
    with pytest.raises(ValidationError, match="less than or equal to 1000"):
        TypeAdapter(Turns).validate_python({"kind": "fixed", "value": 1001})
    length = TypeAdapter(Length).validate_python({"kind": "fixed", "value": 1001})
    assert isinstance(length, Fixed) and length.value == 1001
    # 0 is an image count, not a turn count
    images = TypeAdapter(ImageCount).validate_python({"kind": "normal", "mean": 0, "std": 1})
    assert isinstance(images, Normal) and images.mean == 0
    with pytest.raises(ValidationError, match="greater than 0"):
        TypeAdapter(Turns).validate_python({"kind": "normal", "mean": 0, "std": 1})
    with pytest.raises(ValidationError, match="max must be >= min"):
        TypeAdapter(DurationDistribution).validate_python({"kind": "uniform", "min": "2s", "max": "1s"})


def test_members_pickle_by_name() -> None:
    """Distributed workers receive the scenario pickled: a family's classes are found by name."""
    spec = TypeAdapter(DurationDistribution).validate_python({"kind": "normal", "mean": "2s", "std": 0.5})
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and type(again).__qualname__ == "NormalDuration"
