"""Assemble report.json (every key: docs/report-json.md) from records, windows, SLOs and server facts.

The verdict has a fixed precedence: `error` (the run failed or the client could not keep up, so
no number can be trusted) beats `fail` (an SLO broke) beats `pass`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from loadgen.collect.late_sends import LateSends, Variant
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import RunStats
from loadgen.collect.server_metrics_summary import with_e2e_gap, with_ttft_gap
from loadgen.collect.slice_registry import SLICE_GROUPS
from loadgen.collect.stats import PhaseWindow, client_trust, run_stats
from loadgen.distributed.protocol import lost_error
from loadgen.evaluate.parts import Measured
from loadgen.evaluate.slo import SLOResult, SLOSpec, check_slos, group_slos
from loadgen.report.model import Report, Verdict
from loadgen.report.model.client import Client, ClientStalls, MachineStalls
from loadgen.report.model.metrics import Metrics, Phase, ReportPart, SLOCheck, Workers
from loadgen.report.model.server import Server
from loadgen.report.rejudge import Answers, LateView, MemoryLateView, rejudge_client, slo_answers
from loadgen.scenario.model import Scenario

SCHEMA_VERSION = 1
EXIT_CODES = {"pass": 0, "fail": 1, "error": 2}
Groups = Mapping[str, Measured]  # metrics by class name (or by group name: a slice's grouping)
Part = TypeVar("Part", bound=ReportPart)

# Fractions keep more digits than ms values: 3 decimals would hide a 0.04% error rate.
_DIGITS = {"error_rate": 6, "cancel_rate": 6}
_DEFAULT_DIGITS = 3


def round_floats(value: Any, digits: int = _DEFAULT_DIGITS) -> Any:
    """Round every float in nested dicts/lists (3 decimals; more for fractions)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, Mapping):
        return {key: round_floats(item, _DIGITS.get(key, _DEFAULT_DIGITS)) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [round_floats(item, digits) for item in value]
    return value


def report_part(model: type[Part], data: object) -> Part:
    """`data` (JSON data: loadgen.collect's, loadgen.evaluate's, run.json's) as its part of
    report.json: its floats rounded (round_floats), then validated by the part's model."""
    return model.model_validate(round_floats(data))


def format_started_at(started_at: datetime) -> str:
    """ISO 8601 in UTC with a Z; a naive datetime is taken to be UTC already."""
    if started_at.tzinfo is None:
        started_at = started_at.replace(tzinfo=UTC)
    return started_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def normalize_server(server: Measured) -> Measured:
    """The `server` object with every contract key present (None where not measured)."""
    cold = dict(server.get("cold_start_s") or {})
    memory = dict(server.get("memory") or {})
    return {
        **server,
        "kind": server.get("kind"),
        "cold_start_s": {
            "ready": cold.pop("ready", None),
            "first_token": cold.pop("first_token", None),
            "samples": cold.pop("samples", []),
            "p50": cold.pop("p50", None),
            "max": cold.pop("max", None),
            **cold,
        },
        "memory": {
            "rss_mb_start": memory.pop("rss_mb_start", None),
            "rss_mb_peak": memory.pop("rss_mb_peak", None),
            "growth_mb_per_min": memory.pop("growth_mb_per_min", None),
            "samples": memory.pop("samples", 0),
            **memory,
        },
    }


def decide_verdict(
    run_error: str | None,
    client: Client,
    slos: Sequence[SLOResult],
    requests: int,
) -> tuple[Verdict, str]:
    """(verdict, one-line reason) with precedence error > fail > pass."""
    if run_error:
        return "error", run_error
    if requests == 0:
        # A gate must not pass on nothing (with no SLOs there would be nothing to fail).
        return "error", "no requests were measured after warm-up"
    if not client.trustworthy:
        return (
            "error",
            f"{client.untrusted_because}: the client could not keep up, numbers not trustworthy",
        )
    failed = [result for result in slos if not result.passed]
    if failed:
        details = "; ".join(result.describe() for result in failed)
        return "fail", f"{len(failed)} of {len(slos)} SLOs failed: {details}"
    if not slos:
        return "pass", "no SLOs defined"
    return "pass", f"all {len(slos)} SLOs held"


@dataclass(frozen=True)
class RunFacts:
    """What report.json states about a run besides its records (kept in run.json)."""

    name: str
    started_at: datetime
    duration_s: float
    # run.json's `server` with the summaries of the server's samples: JSON data the SLOs read by
    # the keys a scenario names (loadgen.evaluate.parts.Measured), validated with the report.
    server: Measured
    run_error: str | None = None
    client_cpu_percent: float | None = None  # the load generator's, during the traffic
    workers: Workers | None = None  # a distributed run's `client.workers`
    # What held the load generator's loop, and the machine's stalls (run.json; None: not watched);
    # `machine_stalls.late_sends` is counted by build_report.
    client_stalls: ClientStalls | None = None
    machine_stalls: MachineStalls | None = None
    machine_spans: tuple[tuple[float, float], ...] = ()  # those stalls, (start, end) on the run clock


@dataclass(frozen=True)
class Judging:
    """What a run is judged against: its SLOs, and the bounds on the client's own lateness."""

    slo: SLOSpec | None = None
    max_lag_p99_ms: float = 10.0
    max_client_cpu_percent: float | None = None

    @classmethod
    def of(cls, scenario: Scenario) -> Judging:
        client = scenario.client
        return cls(scenario.slo, client.max_schedule_lag_p99 * 1000, client.max_cpu * 100)


def build_report(
    facts: RunFacts,
    judging: Judging,
    records: Iterable[RequestRecord] | RunStats,
    windows: Sequence[PhaseWindow],
    late: LateView | None = None,
    more_answers: Answers | None = None,
) -> Report:
    """report.json, from the records or their statistics already accumulated
    (RunStats: one pass over a file of any length; `late` then re-judges a run whose sends were
    late, loadgen.report.rejudge, on its SLOs and `more_answers`); `knee`, `capacity` and
    `replicas` are None for a plain run. A lost worker (in `facts.workers`) makes the verdict `error`."""
    name, started_at, duration_s, server = facts.name, facts.started_at, facts.duration_s, facts.server
    slo_spec, workers = judging.slo, facts.workers
    if not isinstance(records, RunStats):
        records = list(records)
        late = late or MemoryLateView(records, windows, judging.max_lag_p99_ms)
    stats = records if isinstance(records, RunStats) else run_stats(records, windows)
    lost = [] if workers is None else [(w.worker, w.requests_lost) for w in workers.lost]
    run_error = facts.run_error or (None if workers is None else lost_error(workers.count, lost))
    metrics = stats.overall().metrics(windows)
    server_info = normalize_server(server)
    if "metrics" in server_info:  # the server's own /metrics (None where not scraped)
        gap = with_ttft_gap(server_info["metrics"], metrics.get("ttft_from_send_ms"))
        gap = with_e2e_gap(gap, metrics.get("e2e_from_send_ms"))
        server_info = {**server_info, "metrics": gap}

    def judge(stats: RunStats, metrics: Measured) -> tuple[Groups, Mapping[str, Groups], list[SLOResult]]:
        """Each class's and each slice grouping's groups' metrics, and the SLO results, of `stats`."""
        named = list(slo_spec.classes) if slo_spec is not None else []
        # One class alone, with no SLO of its own, is the whole run: skip computing `metrics` again.
        several = bool(named) or len(stats.first_id) > 1
        classes = stats.class_metrics(named) if several else {}
        groups = {
            grouping.key: stats.group_metrics(
                grouping.key, list(group_slos(slo_spec, grouping.key)) if slo_spec is not None else []
            )
            for grouping in SLICE_GROUPS
        }
        slos = check_slos(slo_spec, metrics, server_info, classes, groups) if slo_spec is not None else []
        return classes, groups, slos

    classes, groups, slos = judge(stats, metrics)
    cpu_exceeded = (
        facts.client_cpu_percent is not None
        and judging.max_client_cpu_percent is not None
        and facts.client_cpu_percent > judging.max_client_cpu_percent
    )

    def answers(variant: Variant | None) -> dict[str, str]:
        """Every SLO's pass or fail (and `more_answers`), as measured or in a view of the late sends."""
        results = slos
        if variant is not None and late is not None:
            view = late.stats(variant)
            results = judge(view, view.overall().metrics(windows))[2]
        return {**slo_answers(results), **(more_answers(variant) if more_answers is not None else {})}

    late_sends = None if late is None else late.late()
    during = None if late_sends is None else late_sends.during(facts.machine_spans)
    client = rejudge_client(
        _trusted(stats, judging, facts.client_cpu_percent, late_sends),
        late_sends,
        answers,
        cpu_exceeded=cpu_exceeded,
        note=f", {during} of them while the machine stalled" if during else "",
    )
    if facts.client_stalls is not None:
        client.stalls = facts.client_stalls
    if facts.machine_stalls is not None:
        machine = facts.machine_stalls.model_copy()
        machine.late_sends = during
        client.machine = machine
    if workers is not None:
        client.workers = workers
    verdict, reason = decide_verdict(run_error, client, slos, metrics["requests"])
    report = Report(
        schema_version=SCHEMA_VERSION,
        name=name,
        verdict=verdict,
        reason=reason,
        started_at=format_started_at(started_at),
        duration_s=round(duration_s, _DEFAULT_DIGITS),
        metrics=report_part(Metrics, metrics),
        phases=[report_part(Phase, phase) for phase in stats.phase_list(overall=metrics)],
        server=report_part(Server, server_info),
        slo=[report_part(SLOCheck, result.to_dict()) for result in slos],
        client=client,
        knee=None,
        capacity=None,
        replicas=None,
    )
    # Set only when there is more than the whole run to say (else the keys stay out).
    if len(classes) > 1:
        report.classes = {key: report_part(Metrics, value) for key, value in classes.items()}
    for key, named in groups.items():
        if named:
            setattr(report, key, {name: report_part(Metrics, value) for name, value in named.items()})
    return report


def _trusted(
    stats: RunStats, judging: Judging, cpu_percent: float | None, late_sends: LateSends | None
) -> Client:
    """client_trust's judgement of the load generator, with its late sends (`depends` null: not
    re-judged yet) and no warning: what rejudge_client starts from."""
    trust = client_trust(
        stats.lag.percentiles()["p99"] or 0.0,
        judging.max_lag_p99_ms,
        cpu_percent,
        judging.max_client_cpu_percent,
    )
    sends = None if late_sends is None else {**late_sends.to_dict(), "depends": None}
    return report_part(Client, {**trust, "late_sends": sends, "warning": None})


def exit_code(report: Report) -> int:
    """0 pass, 1 an SLO failed, 2 the run failed or cannot be trusted."""
    return EXIT_CODES[report.verdict]
