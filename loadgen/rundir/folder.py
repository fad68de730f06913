"""The run directory: `runs/<UTC>-<name>/` with the validated scenario and the run's metadata.

`run.json` is written when the run starts and rewritten when it ends, so `loadtest report` can
re-render a run that crashed (it then says the run did not finish). A folder that cannot be
created or written raises DiskError (one line) before anything starts; a run.json that cannot be
saved mid-run is reported through `on_failure` instead, never raised into the run's clean-up.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml
from pydantic import BaseModel

from loadgen.rundir.disk import DiskError, disk_reason
from loadgen.rundir.run_json import (
    ClientStallsSection,
    EnergySection,
    EnvironmentSection,
    LevelEntry,
    MachineStallsSection,
    ServerSection,
    VerifySection,
    WorkersSection,
)

RUN_META = "run.json"


@dataclass
class RunMeta:
    started_at: str
    finished: bool = False
    duration_s: float = 0.0
    run_error: str | None = None
    server: ServerSection = field(default_factory=ServerSection)
    client_cpu_percent: float | None = None  # the load generator's CPU use during the traffic
    # Search runs: every level run's window (LevelWindow.to_dict), the peak rate the replica plan
    # used, and the verification's setup (or why it was skipped). Reports are recomputed from these.
    levels: list[LevelEntry] = field(default_factory=list)
    peak_rate: float | None = None
    verify: VerifySection | None = None
    # Distributed runs (--workers): the master's address, local worker pids, then client.workers.
    workers: WorkersSection | None = None
    # A run of one compared environment: {name, notes, cost_per_replica_hour, optional, power}.
    environment: EnvironmentSection | None = None
    # What the energy sampler decided and did (loadgen.collect.energy_sampler.describe): the
    # devices counted or why none, the idle span; the figures come from energy.jsonl.
    energy: EnergySection | None = None
    # What held the load generator's own loop during the traffic (its StallWatch's summary), and
    # the machine's own stalls on its cores (its reference timer's: loadgen.collect.machine_watch).
    client_stalls: ClientStallsSection | None = None
    machine_stalls: MachineStallsSection | None = None

    def save(self, run_dir: Path, on_failure: Callable[[str], None] | None = None) -> bool:
        """Write run.json atomically (a crash never leaves half a file); False when the disk
        refused, said through `on_failure` (the previous run.json, if any, stays whole)."""
        path = run_dir / RUN_META
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if on_failure is not None:
                on_failure(disk_reason("write", RUN_META, exc))
            return False
        return True

    @classmethod
    def load(cls, run_dir: Path) -> RunMeta:
        data = json.loads((run_dir / RUN_META).read_text(encoding="utf-8"))
        return cls(**{key: value for key, value in data.items() if key in cls.__dataclass_fields__})


def create_run_dir(base: Path, name: str, now: datetime | None = None) -> Path:
    """A new `<UTC>-<name>` folder under `base`; DiskError (one line) when it cannot be made."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    candidate = base / f"{stamp}-{name}"
    try:
        base.mkdir(parents=True, exist_ok=True)
        suffix = 2
        while True:
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                candidate = base / f"{stamp}-{name}-{suffix}"
                suffix += 1
    except OSError as exc:
        raise DiskError(disk_reason("create", str(candidate), exc)) from None


def write_scenario(scenario: BaseModel, run_dir: Path) -> None:
    """The scenario as validated, defaults filled in (durations in seconds, sizes in bytes)."""
    data = scenario.model_dump(mode="json", by_alias=True)
    text = yaml.safe_dump(data, sort_keys=False)
    try:
        (run_dir / "scenario.yaml").write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DiskError(disk_reason("write", "scenario.yaml", exc)) from None


def utc_now() -> datetime:
    return datetime.now(UTC)
