"""report.json's `energy`: joules per request and per output token, tokens per joule and watts,
over each measured window, from energy.jsonl (loadgen.report.energy_report writes it).

Where nothing could be read the section says so and carries no figure: `measured` false and the
`reason` (e.g. `no NVML device, no RAPL`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from loadgen.report.model.metrics import ReportPart

_WHOLE = "counted devices are whole devices: every process on them, the load generator's too"


class EnergyWindow(ReportPart):
    """The energy of one measured window (warm-up left out) and what it served."""

    phase: int | None = Field(
        default=None, description="the `phases` entry (its `index`) this window is; null for a sum"
    )
    window_s: float = Field(description="seconds measured (a sum of windows: their total)")
    joules: float = Field(description="energy of the counted devices over the window, J")
    mean_watts: float = Field(description="joules / window_s, W")
    watts_by_device: dict[str, float] = Field(
        description="mean watts of each counted device (`gpuN`, `cpuN` a RAPL package, `dramN` its DRAM)"
    )
    idle_watts: float | None = Field(
        description="the counted devices' idle power before the traffic, W; null: not sampled"
    )
    above_idle_joules: float | None = Field(
        description="joules − idle_watts × window_s: what serving added (may dip below 0 on a "
        "noisy device); null without idle"
    )
    requests: float = Field(description="successful requests served in the window")
    output_tokens: float = Field(description="their output tokens (output tokens/s × window_s)")
    joules_per_request: float | None = Field(description="J per successful request; null: none served")
    joules_per_output_token: float | None = Field(description="J per output token; null: none served")
    above_idle_joules_per_output_token: float | None = Field(
        description="above-idle J per output token; null without idle or tokens"
    )
    tokens_per_joule: float | None = Field(description="output tokens per joule")


class LevelEnergy(ReportPart):
    """A searched level, all its trials pooled: energy against load, beside goodput."""

    level: float = Field(description="concurrent users or requests/s, as `knee.levels`")
    goodput_rps: float = Field(description="successful requests/s (`knee.levels[].throughput_rps`)")
    output_tokens_per_s: float = Field(description="output tokens/s of the successful completions")
    slo_passed: bool = Field(description="every per-level SLO held at this level")
    energy: EnergyWindow = Field(description="the level's energy (its trials' windows summed)")


class IdlePower(ReportPart):
    """The counted devices with the server up and no traffic, before the first request."""

    window_s: float = Field(description="seconds sampled idle")
    watts: float = Field(description="mean idle power of the counted devices together, W")
    watts_by_device: dict[str, float] = Field(description="each device's mean idle watts")


class WholeRun(ReportPart):
    """Every energy sample: from the server's readiness to the end of the traffic."""

    joules: float = Field(
        description="energy of the counted devices, J (idle, warm-ups and every level included)"
    )
    span_s: float = Field(description="seconds sampled")
    mean_watts: float = Field(description="joules / span_s")


class Energy(ReportPart):
    """Energy of serving, measured through Zeus where counters exist (NVML, amdsmi, RAPL)."""

    measured: bool = Field(description="false: no figure below, and `reason` says why")
    setting: Literal["auto", "off", "devices"] = Field(
        description="server.energy: auto (the devices the server's process tree uses), off, or a device list"
    )
    reason: str | None = Field(
        description="why nothing was measured, e.g. `no NVML device, no RAPL`, `off`, "
        "`zeus not installed: …`; null when measured"
    )
    source: str | None = Field(description="the measuring library and its version, e.g. `zeus 0.16.0`")
    devices: list[str] = Field(description="the devices counted: gpuN, cpuN (RAPL package), dramN")
    how: str = Field(description="how the devices were chosen")
    notes: list[str] = Field(description="what to know about the figures (always: " + _WHOLE + ")")
    idle: IdlePower | None = Field(description="idle power before the traffic; null: not sampled")
    whole_run: WholeRun | None = Field(description="the energy of the whole run; null: not measured")
    measured_window: EnergyWindow | None = Field(
        description="all measured windows together (a search: the operating point's level)"
    )
    phases: list[EnergyWindow] = Field(description="each phase, or each level run of a search")
    levels: list[LevelEnergy] = Field(description="a search's levels (tokens/J against load); else empty")
    capacity: EnergyWindow | None = Field(
        description="a search: at the capacity level, the tokens of a load at which every SLO held "
        "(energy per SLO-compliant token); else null"
    )
