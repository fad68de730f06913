"""What every subcommand says the same way: its exit codes and its one-line error."""

from __future__ import annotations

import sys
from pathlib import Path

from kernel.redact import redact
from loadgen.report.client_words import punctuality_lines
from loadgen.report.model import Report

# 0 every SLO held (or the command did its job), 1 an SLO failed (or a regression), 2 the run
# or the command itself failed; 3 (the release gate only) inconclusive: the comparison could not
# have detected a regression the size of its threshold, which is not a pass.
EXIT_PASS, EXIT_FAIL, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 3


def fail(message: str, command: str = "") -> int:
    """`loadtest[ COMMAND]: error: MESSAGE` on stderr (credentials redacted: the message may echo
    a server's or Grafana's answer); returns exit code 2."""
    who = f"loadtest {command}" if command else "loadtest"
    print(f"{who}: error: {redact(message)}", file=sys.stderr)
    return EXIT_ERROR


def print_verdict(report: Report, run_dir: Path) -> None:
    """The verdict line; before it, when sends were late, what the client and the machine did."""
    client = report.client
    late = client.late_sends is not None and client.late_sends.count > 0
    if client.warning or (late and not client.trustworthy):
        for line in punctuality_lines(client):
            kind = "warning" if line == client.warning else "note"
            print(f"loadtest: {kind}: {line}", file=sys.stderr)
    print(f"loadtest: {report.verdict}: {redact(report.reason)} (run: {run_dir})", file=sys.stderr)
