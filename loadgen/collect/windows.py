"""The measured windows of a run: each phase's part past warm-up, on the run clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PhaseWindow:
    """The measured part of a phase (warm-up already cut off), in seconds since the run's start."""

    index: int
    kind: str
    target_rate: float
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


def target_rate(windows: Sequence[PhaseWindow]) -> float | None:
    """Duration-weighted mean of the windows' target rates."""
    duration = sum(window.duration_s for window in windows)
    if duration <= 0:
        return None
    return sum(window.target_rate * window.duration_s for window in windows) / duration
