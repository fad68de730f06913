"""report.html's drills (`verify.drills`): an overview table under the verification, then a
section per drill: its numbers as cards, the fleet over time (replicas up, ready, in rotation),
requests per replica, and TTFT p95 and errors per second with the windows over an SLO shaded.

Everything is drawn from the drill's evaluation in report.json (`replicas.verified.drills[]`);
times are seconds on the run clock, like the rest of the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from loadgen.report import drill_facts as words
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import PALETTE, SLO_COLOR, Chart, Series, bar_chart, gid, line_chart
from loadgen.report.html.page import Card, CellStatus, Section, cards, grid, note, status_of, table
from loadgen.report.html.timeseries_section import TIME_LABEL, wide_range
from loadgen.report.model import Report
from loadgen.report.model.drills import Drill, DrillSecond
from loadgen.report.model.metrics import SLOCheck

NAN = float("nan")
DISRUPTION_COLOR = "#6A1B9A"
# The fleet's three counts often coincide: the wider line lies underneath, so each stays visible.
FLEET = (
    ("up", "up", "#bdbdbd", 6.0),
    ("ready", "ready", PALETTE[0], 3.2),
    ("in_rotation", "in rotation", PALETTE[1], 1.6),
)
_KIND_WORDS = {"kill": "kill one replica", "rolling_restart": "rolling restart", "scale_up": "scale up"}


def _extent(drill: Drill) -> tuple[float, float]:
    """The drill's measured part on the run clock: from its first window (or fleet step) to its
    last window's end (or the disruption's, should it run past)."""
    starts = [w.start_s for w in drill.windows]
    starts += [p.t_s for p in drill.fleet]
    starts += [s.t_s for s in drill.series]
    ends = [w.end_s for w in drill.windows]
    ends += [s.t_s + 1.0 for s in drill.series]
    ends += [drill.disruption.start_s, drill.disruption.end_s]
    if not starts:
        starts = ends[:1] or [0.0]
    return min(starts), max([*ends, min(starts) + 1.0])


def _shade(drill: Drill, legend: bool = True) -> Callable[[Axes], None]:
    """A `decorate` that shades the windows over an SLO (gid span-violated-<n>) and marks the
    disruption's start and end with dotted lines (`legend`: named in the legend, else in the caption)."""
    violated = [w for w in drill.windows if w.violated]
    disruption = drill.disruption

    def decorate(ax: Axes) -> None:
        for number, window in enumerate(violated):
            label = "over an SLO" if number == 0 else None
            patch = ax.axvspan(window.start_s, window.end_s, facecolor=SLO_COLOR, alpha=0.13, lw=0)
            patch.set_gid(f"span-violated-{number}")
            if label:
                patch.set_label(label)
        for key, at, label in (
            ("start", disruption.start_s, "disruption" if legend else None),
            ("end", disruption.end_s, None),
        ):
            line = ax.axvline(at, color=DISRUPTION_COLOR, linestyle=":", lw=1.4, label=label)
            line.set_gid(f"marker-disruption-{key}")

    return decorate


def fleet_steps(drill: Drill) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The fleet's step times and counts (up, ready, in_rotation), the last held to the drill's end."""
    points = sorted(drill.fleet, key=lambda p: p.t_s)
    if not points:
        return np.empty(0), {key: np.empty(0) for key, *_ in FLEET}
    _, end = _extent(drill)
    x = np.array([p.t_s for p in points] + [max(end, points[-1].t_s)])
    steps = [(p.up, p.ready, p.in_rotation) for p in [*points, points[-1]]]
    counts = {key: np.array([step[i] for step in steps]) for i, (key, *_) in enumerate(FLEET)}
    return x, counts


def fleet_chart(drill: Drill, chart_id: str) -> Chart:
    """Replicas up, ready and in rotation as step lines from the drill's start to its end."""
    x, counts = fleet_steps(drill)
    series = [
        Series(key.replace("_", "-"), x, counts[key], label, color, "step", line_width=width)
        for key, label, color, width in FLEET
    ]
    top = max([drill.replicas, *counts["up"].tolist(), 1])
    shade = _shade(drill, legend=False)  # four entries fit the legend's one row

    def decorate(ax: Axes) -> None:
        shade(ax)
        ax.set_ylim(0, top + 0.6)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # replicas come whole

    return line_chart(
        chart_id,
        "The fleet over time",
        TIME_LABEL,
        "replicas",
        series,
        decorate=decorate,
        caption="Up: replica processes running; ready: their readiness answered; in rotation: the "
        "balancer sends them requests. Red: the windows over an SLO; dotted: the disruption.",
    )


def per_replica_chart(drill: Drill, chart_id: str) -> Chart:
    """Requests routed to each slot in the measured part, with the even share marked."""
    counts = sorted(drill.per_replica.items(), key=lambda item: int(item[0]))
    values = [float(count) for _, count in counts]
    even = sum(values) / len(values) if values else 0.0

    def decorate(ax: Axes) -> None:
        if values:
            line = ax.axhline(even, color="#555555", linestyle="--", lw=1.2, label="even share")
            line.set_gid("marker-even-share")
            # Named at its left end, clear of the bars' values: a single line gets no legend.
            ax.annotate(
                f"even share {even:.0f}",
                (0.0, even),
                xycoords=("axes fraction", "data"),
                xytext=(4, 4),
                textcoords="offset points",
                ha="left",
                fontsize=9,
                color="#555555",
            )

    return bar_chart(
        chart_id,
        "Requests per replica",
        [f"replica {slot}" for slot, _ in counts],
        values,
        colors=[PALETTE[0]] * len(values),
        value_label="requests",
        decorate=decorate,
        caption="Requests the balancer routed to each slot (a replacement keeps its slot) in the "
        "measured part.",
    )


def _per_second(drill: Drill, value: Callable[[DrillSecond], float | None]) -> tuple[np.ndarray, np.ndarray]:
    """A per-second value as a step series, its last second carried to the second's end."""
    seconds = sorted(drill.series, key=lambda s: s.t_s)
    x = [s.t_s for s in seconds]
    y = [NAN if (v := value(s)) is None else float(v) for s in seconds]
    if seconds:
        x.append(x[-1] + 1.0)
        y.append(y[-1])
    return np.array(x), np.array(y)


def ttft_chart(drill: Drill, slos: Sequence[SLOCheck], chart_id: str) -> Chart:
    """TTFT p95 per second; e2e p95 where no request had a first token (an API of items)."""
    key = "e2e" if words.latency_name([drill]) == "e2e" else "ttft"
    label = "e2e p95" if key == "e2e" else "TTFT p95"
    x, values = _per_second(drill, lambda s: s.e2e_p95_ms if key == "e2e" else s.ttft_p95_ms)
    p95 = [slo for slo in slos if slo.name == f"{key} p95"]  # the one this series compares to
    return line_chart(
        chart_id,
        f"{label} per second",
        TIME_LABEL,
        "ms",
        [Series(f"{key}-p95", x, values, label, PALETTE[0], "step")],
        thresholds=slo_lines.thresholds(p95, [key]),
        log_y=wide_range([values], 20.0),
        decorate=_shade(drill),
        caption=f"{label} of the requests sent in each second; red: the windows over a per-level SLO.",
    )


def errors_chart(drill: Drill, chart_id: str) -> Chart:
    x, errors = _per_second(drill, lambda s: s.errors)
    _, requests = _per_second(drill, lambda s: s.requests)
    return line_chart(
        chart_id,
        "Errors and requests per second",
        TIME_LABEL,
        "requests/s",
        [
            Series("requests", x, requests, "requests sent", "#9e9e9e", "step"),
            Series("errors", x, errors, "failed", SLO_COLOR, "step", line_width=2.2),
        ],
        y_min=0,
        decorate=_shade(drill),
        caption="Requests sent in each second and those of them that failed.",
    )


def _cards(drill: Drill) -> str:
    verdict = "passed" if drill.passed else "FAILED"
    after = drill.violation_s_after_detection
    budget = words.seconds(drill.max_violation_s)
    within = f"{words.seconds(after)} over the SLO, within a budget of {budget}"
    reason = within if drill.passed else words.failure_line(drill)
    over: CellStatus = "fail" if after > drill.max_violation_s else "none"
    kill = drill.kind == "kill"
    spent = f"{words.seconds(drill.violation_s)} in all; budget {budget}"
    lost = "; ".join(
        part for part in (words.lost_parts(drill), f"errors: {words.errors_words(drill)}") if part
    )
    items = [
        Card(f"drill {drill.name}", verdict, reason, status_of(drill.passed), big=True),
        Card("over the SLO" + (" after detection" if kill else ""), words.seconds(after), spent, over),
        Card("time to detect", words.seconds(drill.time_to_detect_s), "kill → out of rotation"),
        Card("time to recover", words.seconds(drill.time_to_recover_s), "disruption → last bad s"),
        Card("lost requests", _lost_total(drill), lost),
        Card(f"{words.latency_name([drill])} p95", words.ttft_words(drill), "steady → during the disruption"),
        Card("replacement cold start", words.cold_start_words(drill), "start → ready"),
        Card("survivors", words.survivors_words(drill), "the other replicas, while one was out",
             status_of(drill.survivors.held)),
        Card("unaccounted", str(drill.unaccounted), "planned − recorded requests",
             "fail" if drill.unaccounted else "none"),
    ]  # fmt: skip
    if drill.kind == "scale_up":
        items.insert(2, Card("decision → serving", words.scale_words(drill), "each replica the scaler added"))
    if not kill:  # detection is the kill's number: other kinds take replicas out on purpose
        items = [card for card in items if card.label != "time to detect"]
    return cards(items, even=True)  # equal widths: the rows line up


def _lost_total(drill: Drill) -> str:
    return "–" if drill.lost is None else str(drill.lost.total)


def _notes(drill: Drill) -> str:
    said = []
    if drill.unfinished:
        said.append(f"Unfinished: {drill.unfinished}.")
    if drill.merged_windows:
        said.append(f"{drill.merged_windows} windows held too few requests and were merged with a neighbour.")
    return "".join(note(text) for text in said)


def drill_section(drill: Drill, slos: Sequence[SLOCheck]) -> Section:
    name = drill.name or drill.kind
    prefix = f"drill-{gid(name)}"
    charts = [
        fleet_chart(drill, f"{prefix}-fleet"),
        per_replica_chart(drill, f"{prefix}-per-replica"),
        ttft_chart(drill, slos, f"{prefix}-ttft"),
        errors_chart(drill, f"{prefix}-errors"),
    ]
    kind = _KIND_WORDS.get(drill.kind, drill.kind)
    if drill.kind == "scale_up" and drill.from_replicas is not None:
        kind += f" from {drill.from_replicas} to {drill.replicas} replicas"
    verdict = "passed" if drill.passed else "FAILED"
    title = f"Drill {name}: {kind} — {verdict}"
    body = _cards(drill) + _notes(drill) + grid([chart.html() for chart in charts])
    return Section(title, body, prefix)


def drill_sections(report: Report) -> list[Section]:
    """A section per drill, in the order run."""
    return [drill_section(drill, report.slo) for drill in words.drills_of(report)]


def drill_overview(report: Report) -> str:
    """The drills in a table under the verification ('' without drills)."""
    drills = words.drills_of(report)
    if not drills:
        return ""
    rows = [
        [
            drill.name,
            drill.kind,
            words.violation_words(drill),
            words.seconds(drill.time_to_recover_s),
            _lost_total(drill),
            words.ttft_words(drill),
            "passed" if drill.passed else "FAILED",
        ]
        for drill in drills
    ]
    statuses = [status_of(drill.passed) for drill in drills]
    latency = f"{words.latency_name(drills)} p95"
    headers = ["drill", "kind", "over the SLO s", "recovered in", "lost", latency, "verdict"]
    failed = [note(words.failure_line(drill)) for drill in words.failed_drills(drills)]
    said = note(
        "Over the SLO: seconds of windows over a per-level SLO from the balancer's detection on / in "
        "all / the drill's budget. TTFT p95: steady → during the disruption. Each drill has its "
        "section below."
    )
    return "<h3>Drills</h3>" + table(headers, rows, statuses, status_column=6) + "".join(failed) + said
