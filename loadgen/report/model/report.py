"""The whole of report.json (schema_version 1), as loadgen.report.build and search_report write it.

tests/unit/test_schemas.py validates real runs' reports against it with extra keys forbidden;
docs/schema/report.schema.json is generated from it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from loadgen.collect.slice_registry import SLICE_GROUPS, Grouping, grouping
from loadgen.report.model.client import Client
from loadgen.report.model.energy import Energy
from loadgen.report.model.evaluation import Capacity, Knee, OperatingPoint, Replicas
from loadgen.report.model.metrics import Metrics, Phase, ReportPart, SLOCheck
from loadgen.report.model.server import Server

Verdict = Literal["pass", "fail", "error"]


class Report(ReportPart):
    """report.json: the verdict of one run and everything it was decided on."""

    model_config = ReportPart.model_config | {"title": "loadtest report.json"}

    schema_version: Literal[1] = Field(description="this layout's version")
    name: str = Field(description="the scenario's `name`")
    verdict: Verdict = Field(
        description="pass (exit 0), fail: an SLO failed (exit 1), "
        "error: the run failed or cannot be trusted (exit 2)"
    )
    reason: str = Field(description="the verdict in one line")
    started_at: str = Field(
        pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", description="when the run started, UTC, ISO 8601"
    )
    duration_s: float = Field(description="wall-clock seconds the run took, server start-up included")
    metrics: Metrics = Field(description="all measured requests (a search run: the operating point's)")
    classes: dict[str, Metrics] | None = Field(
        default=None, description="per workload class, when there are several (`target_rate` null)"
    )
    # A slice's grouping's key (the adapters slice's), declared here for its place in the file.
    adapters: dict[str, Metrics] | None = Field(default=None, description=grouping("adapters").description)
    phases: list[Phase] = Field(description="each traffic phase, or each level run of a search")
    server: Server = Field(description="the server under test")
    slo: list[SLOCheck] = Field(
        description="one entry per SLO, in the scenario's order, then each class's, then each adapter's",
    )
    client: Client = Field(description="the load generator")
    knee: Knee | None = Field(description="search runs; null otherwise")
    capacity: Capacity | None = Field(description="search runs; null otherwise")
    replicas: Replicas | None = Field(description="search runs with `capacity:`; null otherwise")
    operating_point: OperatingPoint | None = Field(
        default=None, description="search runs only: the level `metrics` and `slo` describe"
    )
    energy: Energy | None = Field(
        default=None,
        description="energy of serving (`server.energy`), or why it was not measured; null only in "
        "run folders of older versions",
    )

    def groups(self) -> list[tuple[Grouping, dict[str, Metrics]]]:
        """Each slice grouping's metrics by group (SLICE_GROUPS' order), where the run had any."""
        found = [(each, getattr(self, each.key, None)) for each in SLICE_GROUPS]
        return [(each, named) for each, named in found if named]
