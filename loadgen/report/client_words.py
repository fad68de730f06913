"""What the client's own punctuality says, in words: the re-judged late sends' warning, the
machine's stalls and the client's own (report.md, report.html and the terminal say the same)."""

from __future__ import annotations

from loadgen.fmt import format_number
from loadgen.report.model.client import Client


def machine_line(client: Client) -> str | None:
    """'the machine stalled 3 times, up to 61 ms (steal 0.4%); 2 late sends were during them'."""
    machine = client.machine
    if machine is None or not machine.measured:
        return None
    steal = "" if machine.steal_percent is None else f" (steal {format_number(machine.steal_percent)}%)"
    if not machine.count:
        return f"the machine did not stall {format_number(machine.threshold_ms or 0.0)} ms or more{steal}"
    times = "once" if machine.count == 1 else f"{machine.count} times"
    line = f"the machine stalled {times}, up to {format_number(machine.max_ms or 0.0)} ms{steal}"
    if machine.late_sends:
        line += f"; {machine.late_sends} of the late sends left during them"
    return line


def stalls_line(client: Client) -> str | None:
    """'the client held its own loop 2 times, up to 31 ms (greenlet 2)'; None when it did not."""
    stalls = client.stalls
    if stalls is None or not stalls.count:
        return None
    causes = ", ".join(f"{cause} {count}" for cause, count in sorted(stalls.by_cause.items()))
    times = "once" if stalls.count == 1 else f"{stalls.count} times"
    machine = f"; {stalls.during_machine} while the machine stalled" if stalls.during_machine else ""
    return (
        f"the client held its own loop {times}, up to {format_number(stalls.max_ms)} ms ({causes}{machine})"
    )


def punctuality_lines(client: Client) -> list[str]:
    """The warning (if the run was trusted despite late sends), then the stalls, machine first."""
    lines = [client.warning] if client.warning else []
    return lines + [line for line in (machine_line(client), stalls_line(client)) if line is not None]
