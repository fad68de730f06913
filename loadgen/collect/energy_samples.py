"""Energy samples: the lines of `energy.jsonl`, one per measurement interval, and how a Zeus
`Measurement` becomes one.

Each line is the energy each counted device used in one interval `(t_s − dt_s, t_s]` on the run
clock (seconds from the traffic's t0, negative before it), e.g.
`{"t_s": 1.5, "dt_s": 0.5, "joules": {"gpu0": 151.2, "cpu0": 40.3, "dram0": 3.1}}`.
Consecutive intervals follow each other without a gap, so summing them (loadgen.collect.energy_accounting)
gives the energy of any window. Devices are named `gpuN` (a GPU, as the load generator numbers
them), `cpuN` (RAPL package N) and `dramN` (that package's DRAM zone).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypedDict, cast

ENERGY_FILE = "energy.jsonl"


class ZeusMeasurement(Protocol):
    """What zeus.monitor.energy.Measurement carries (joules per device index, seconds)."""

    time: float
    gpu_energy: dict[int, float]
    cpu_energy: dict[int, float] | None
    dram_energy: dict[int, float] | None


class EnergyLine(TypedDict):
    """A line of energy.jsonl."""

    t_s: float
    dt_s: float
    joules: dict[str, float]


@dataclass(frozen=True)
class EnergySample:
    """Joules each device used in the interval `(t_s − dt_s, t_s]` of the run clock."""

    t_s: float
    dt_s: float
    joules: Mapping[str, float] = field(default_factory=dict)

    @property
    def start_s(self) -> float:
        return self.t_s - self.dt_s

    def to_dict(self) -> EnergyLine:
        return {"t_s": self.t_s, "dt_s": self.dt_s, "joules": dict(self.joules)}

    @classmethod
    def from_dict(cls, data: EnergyLine) -> EnergySample:
        """A line as read (JSON, unchecked: an EnergyLine when this tool wrote it)."""
        joules = data["joules"]
        if not isinstance(joules, Mapping):
            raise TypeError("joules is not a mapping")
        return cls(float(data["t_s"]), float(data["dt_s"]), {str(k): float(v) for k, v in joules.items()})


def device_joules(measurement: ZeusMeasurement) -> dict[str, float]:
    """A Measurement's joules by device name (gpuN, cpuN, dramN)."""
    found = {f"gpu{index}": joules for index, joules in measurement.gpu_energy.items()}
    found |= {f"cpu{index}": joules for index, joules in (measurement.cpu_energy or {}).items()}
    found |= {f"dram{index}": joules for index, joules in (measurement.dram_energy or {}).items()}
    return {name: float(value) for name, value in found.items()}


def from_measurement(end_s: float, measurement: ZeusMeasurement) -> EnergySample:
    """The sample of one Zeus measurement window that ended at `end_s` on the run clock."""
    return EnergySample(t_s=end_s, dt_s=float(measurement.time), joules=device_joules(measurement))


def read_energy_samples(path: Path) -> Iterator[EnergySample]:
    """The samples of an energy.jsonl, in file order; a torn or foreign line is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                data = json.loads(line)
                if isinstance(data, dict):
                    # a line as read, unchecked: from_dict's errors skip it
                    yield EnergySample.from_dict(cast(EnergyLine, data))
            except (ValueError, KeyError, TypeError):
                continue
