"""The whole run's plan, computed before the first request: every request's due time and size.

Pure and seeded: the same scenario always yields the same schedule, so two runs differ only in
what the server did. Phases run back to back; the warm-up boundary splits a phase into two parts
that each send exactly their share, so the measured window gets exactly rate × its length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadgen.collect.stats import PhaseWindow
from loadgen.scenario import Length, Scenario
from loadgen.traffic.arrivals import arrival_offsets


@dataclass(frozen=True)
class PlannedRequest:
    id: int
    phase: int
    scheduled_s: float
    prompt_tokens: int
    output_tokens: int
    warmup: bool
    max_concurrency: int


@dataclass(frozen=True)
class Schedule:
    requests: list[PlannedRequest]
    windows: list[PhaseWindow]  # measured part of each phase (warm-up cut off)
    phase_starts: list[float]
    duration_s: float

    def phase_at(self, elapsed_s: float) -> int:
        """Index of the phase running at `elapsed_s` (the last one once the schedule is over)."""
        index = 0
        for i, start in enumerate(self.phase_starts):
            if elapsed_s >= start:
                index = i
        return index


def build_schedule(scenario: Scenario) -> Schedule:
    rng = np.random.default_rng(scenario.seed)
    times: list[float] = []
    phases: list[int] = []
    windows: list[PhaseWindow] = []
    starts: list[float] = []
    offset = 0.0
    for index, phase in enumerate(scenario.traffic):
        starts.append(offset)
        cut = min(max(scenario.warmup - offset, 0.0), phase.duration)
        for start, end in ((0.0, cut), (cut, phase.duration)):
            if end > start:
                arrivals = offset + arrival_offsets(phase, start, end, rng)
                times.extend(arrivals.tolist())
                phases.extend([index] * len(arrivals))
        if cut < phase.duration:
            windows.append(PhaseWindow(index, phase.kind, phase.rate, offset + cut, offset + phase.duration))
        offset += phase.duration

    prompt = sample_lengths(scenario.workload.prompt_tokens, len(times), rng)
    output = sample_lengths(scenario.workload.output_tokens, len(times), rng)
    requests = [
        PlannedRequest(
            id=i,
            phase=phases[i],
            scheduled_s=times[i],
            prompt_tokens=int(prompt[i]),
            output_tokens=int(output[i]),
            warmup=times[i] < scenario.warmup,
            max_concurrency=scenario.traffic[phases[i]].max_concurrency,
        )
        for i in range(len(times))
    ]
    return Schedule(requests=requests, windows=windows, phase_starts=starts, duration_s=offset)


def sample_lengths(spec: Length, count: int, rng: np.random.Generator) -> np.ndarray:
    """Token counts drawn from `spec`, at least 1 each."""
    if spec.kind == "fixed":
        values = np.full(count, spec.value, dtype=float)
    elif spec.kind == "uniform":
        values = rng.integers(spec.min, spec.max + 1, size=count).astype(float)
    elif spec.kind == "normal":
        values = rng.normal(spec.mean, spec.std, size=count)
    else:  # lognormal with the requested mean: E[X] = exp(mu + sigma²/2)
        mu = np.log(spec.mean) - spec.sigma**2 / 2
        values = rng.lognormal(mu, spec.sigma, size=count)
    lengths: np.ndarray = np.maximum(1, np.rint(values)).astype(int)
    return lengths
