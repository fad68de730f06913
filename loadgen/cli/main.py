"""The `loadtest` command.

`loadtest FILE` is `loadtest run FILE`; `loadtest run --target URL --rate 10 ...` builds the
scenario from flags instead (loadgen/cli/flags.py, docs/cli.md). Exit codes: 0 every SLO held,
1 an SLO failed, 2 the run itself failed (bad scenario, server did not start, client saturated,
interrupted), each with a one-line reason on stderr; the release gate (`compare`, `ab`): 0 no
regression, 1 regression, 3 inconclusive; the environment comparison (`rank`, a run with
`environments:`): 0 a recommendation, 1 no environment meets the SLOs. Gevent's monkey-patching
happens in the commands that send traffic (`run`, `ab`, `worker`: gevent_world.py), never on
import.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.cli import ab as cli_ab
from loadgen.cli import compare as cli_compare
from loadgen.cli import dashboards as cli_dashboards
from loadgen.cli import export as cli_export
from loadgen.cli import gevent_world
from loadgen.cli import init as cli_init
from loadgen.cli import rank as cli_rank
from loadgen.cli import schema as cli_schema
from loadgen.cli import worker as cli_worker
from loadgen.cli.common import EXIT_ERROR, EXIT_PASS, fail, print_verdict
from loadgen.cli.flags import add_scenario_flags, add_set_flag
from loadgen.cli.scenario_source import guarded, load_options, scenario_yaml
from loadgen.run.runtimes import required_missing
from loadgen.rundir.disk import DiskError
from loadgen.scenario.loader import load_scenario
from loadgen.scenario.mode import SearchMode

if TYPE_CHECKING:
    from gevent.event import Event

    from loadgen.distributed.protocol import DistributedOptions
    from loadgen.live.wiring import LiveOptions
    from loadgen.scenario.model import Scenario

SUBCOMMANDS = (
    "run",
    "validate",
    "report",
    "compare",
    "rank",
    "ab",
    "dashboards",
    "worker",
    "schema",
    "export",
    "init",
)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] not in SUBCOMMANDS and not args[0].startswith("-"):
        args.insert(0, "run")  # `loadtest scenario.yaml`
    parser = _parser()
    options = parser.parse_args(args)
    if options.command is None:
        parser.print_help()
        return EXIT_ERROR
    handler = {
        "run": _run,
        "validate": _validate,
        "report": _report,
        "compare": cli_compare.handle,
        "rank": cli_rank.handle,
        "ab": lambda options: cli_ab.handle(options, _load),
        "dashboards": cli_dashboards.handle,
        "worker": cli_worker.handle,
        "schema": cli_schema.handle,
        "export": cli_export.handle,
        "init": cli_init.handle,
    }[options.command]
    # Until a command installs its own handlers (the gevent world's), Ctrl-C or a SIGTERM ends
    # it with one line and exit 2, never a KeyboardInterrupt traceback.
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        return handler(options)
    except KeyboardInterrupt:
        print(f"loadtest: {options.command}: interrupted before anything ran", file=sys.stderr)
        return EXIT_ERROR


def _interrupted(signum: int, _: object) -> None:
    raise KeyboardInterrupt


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loadtest",
        description="Load-test an OpenAI-compatible inference server and check its SLOs.",
        epilog="`loadtest FILE` is short for `loadtest run FILE`. Exit: 0 pass, 1 SLO failed, 2 run failed; "
        "compare and ab (the release gate): 0 no regression, 1 regression, 2 bad input or a failed run, "
        "3 inconclusive (a regression of the threshold's size could have gone unseen: not a pass); "
        "rank (the environment comparison): 0 a recommendation, 1 no environment meets the SLOs.",
    )
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="run a scenario: start the server, send the load, judge the SLOs")
    run.add_argument("file", type=Path, nargs="?", help="scenario YAML (or --target URL and the flags below)")
    run.add_argument(
        "--print-scenario", action="store_true", help="print the scenario as YAML and exit; nothing is run"
    )
    add_set_flag(run)
    run.add_argument(
        "--out", type=Path, help="directory for run folders (default: the scenario's report.dir)"
    )
    run.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="live progress display (auto: only when stdout is a terminal)",
    )
    run.add_argument(
        "--prometheus-port",
        type=int,
        metavar="P",
        help="serve live metrics on this port (overrides prometheus.port; 0 picks a free one)",
    )
    run.add_argument(
        "--no-linger",
        action="store_true",
        help="stop the metrics exporter as soon as the run ends (default: keep it up prometheus.linger)",
    )
    run.add_argument(
        "--workers", type=int, default=0, metavar="N", help="send the load from N local worker processes"
    )
    run.add_argument(
        "--remote-workers",
        type=int,
        default=0,
        metavar="K",
        help="also wait for K workers from elsewhere (`loadtest worker --master HOST:PORT`)",
    )
    run.add_argument(
        "--records",
        choices=("all", "summary"),
        default="all",
        help="with workers: `summary` ships mergeable statistics instead of every record "
        "(no requests.jsonl; for long distributed soaks) (default: all)",
    )
    run.add_argument(
        "--master-bind",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where the master listens for workers (default 127.0.0.1, a free port)",
    )
    add_scenario_flags(run)
    validate = commands.add_parser("validate", help="check a scenario file; print OK or located errors")
    validate.add_argument("file", type=Path, nargs="?", help="scenario YAML (or --target URL and the flags)")
    add_set_flag(validate)
    add_scenario_flags(validate)
    validate.add_argument(
        "--workers", type=int, default=0, metavar="N", help="check the rates against N sending processes"
    )
    report = commands.add_parser("report", help="re-render the reports of a run from its requests.jsonl")
    report.add_argument("run_dir", type=Path)
    compare = commands.add_parser(
        "compare",
        help="BASELINE CURRENT: release gate, exit 1 when CURRENT regressed (significantly), "
        "3 when it could not have seen a regression of the threshold's size",
        description="The release gate: CURRENT against BASELINE, each latency row with its minimum "
        "detectable effect (80% power at --alpha). To rank environments' search runs, or an "
        "environments run, use `loadtest rank RUN...`.",
        epilog=f"Exit: {cli_compare.GATE_EXITS}.",
    )
    compare.add_argument(
        "runs",
        type=Path,
        nargs="+",
        metavar="RUN",
        help="BASELINE and CURRENT: run directories (or their report.json)",
    )
    # The ranking's options before `loadtest rank`: kept, hidden, so that an old script gets the
    # line naming the `loadtest rank ...` to type, not argparse's "unrecognized arguments".
    compare.add_argument("--environments", action="store_true", help=argparse.SUPPRESS)
    compare.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    compare.add_argument("--confidence", help=argparse.SUPPRESS)
    cli_compare.add_gate_options(compare)
    compare.add_argument("--json", type=Path, dest="json_path", help="also write the comparison as JSON here")
    compare.add_argument(
        "--html",
        type=Path,
        dest="html_path",
        help="where to write compare.html (default: compare.html in CURRENT's run directory)",
    )
    cli_rank.add_parser(commands)
    cli_ab.add_parser(commands)
    cli_dashboards.add_parser(commands)
    cli_worker.add_parser(commands)
    cli_schema.add_parser(commands)
    cli_export.add_parser(commands)
    cli_init.add_parser(commands)
    return parser


def _load(path: Path, senders: int) -> Scenario | None:
    """The scenario, or None once its located errors are on stderr."""
    return guarded(lambda: load_scenario(path, senders=max(1, senders)), str(path))


def _validate(options: argparse.Namespace) -> int:
    if load_options(options, max(1, options.workers), "validate") is None:
        return EXIT_ERROR
    print("OK")
    return EXIT_PASS


def _run(options: argparse.Namespace) -> int:
    # The rates are checked against the processes that will send: --workers and remote ones.
    loaded = load_options(options, max(1, options.workers + options.remote_workers), "run")
    if loaded is None:
        return EXIT_ERROR
    scenario, data = loaded
    if options.print_scenario:
        sys.stdout.write(scenario_yaml(data))
        return EXIT_PASS
    try:
        workers = _distributed_options(options, isinstance(scenario.mode, SearchMode))
    except ValueError as exc:
        return fail(str(exc))
    missing = required_missing(scenario)  # before any server starts: one line, what to install
    if missing is not None:
        return fail(missing)
    stop = gevent_world.enter()  # the gevent world starts here (Locust needs a patched stdlib)
    from loadgen.live.wiring import LiveOptions, build_observers
    from loadgen.run.execute import run_scenario

    show = options.progress == "always" or (options.progress == "auto" and sys.stdout.isatty())
    live = LiveOptions(prometheus_port=options.prometheus_port, linger=not options.no_linger, progress=show)
    try:
        if scenario.environments:
            return _run_environments(scenario, options, stop, live)
        observers = build_observers(scenario, live)
        result = run_scenario(scenario, out_dir=options.out, stop=stop, observers=observers, workers=workers)
    except DiskError as exc:  # the run folder cannot be made or written: nothing was started
        return fail(str(exc))
    if show:
        from rich.console import Console

        from loadgen.cli.summary import print_summary

        print_summary(result.report, Console())
    print_verdict(result.report, result.run_dir)
    return result.exit_code


def _run_environments(scenario: Scenario, options: argparse.Namespace, stop: Event, live: LiveOptions) -> int:
    """Each environment's search in its own sub-folder, then the comparison and its exit code."""
    from rich.console import Console

    from loadgen.environments.run import run_environments

    result = run_environments(scenario, out_dir=options.out, stop=stop, live=live, console=Console(width=160))
    print(f"loadtest: comparison written to {result.run_dir}", file=sys.stderr)
    return result.exit_code


def _distributed_options(options: argparse.Namespace, search: bool) -> DistributedOptions | None:
    """--workers/--remote-workers/--master-bind as options for the master; None: one process."""
    from loadgen.distributed.protocol import DistributedOptions

    if options.workers < 0 or options.remote_workers < 0:
        raise ValueError("--workers and --remote-workers count processes: give 0 or more")
    if options.workers + options.remote_workers == 0:
        if options.records != "all":
            raise ValueError("--records summary is for distributed runs: give --workers or --remote-workers")
        return None
    if search:
        raise ValueError("--workers does not run search: scenarios (run them in one process)")
    host, _, port_text = options.master_bind.rpartition(":")
    if not host or not port_text.isdigit():
        raise ValueError(f"--master-bind {options.master_bind!r}: give HOST:PORT (PORT 0: a free one)")
    from loadgen.distributed.auth import check_master_bind, worker_secret

    warning = check_master_bind(host, worker_secret())  # wide without a secret: ValueError, exit 2
    if warning:
        print(f"loadtest: warning: {warning}", file=sys.stderr)
    return DistributedOptions(options.workers, options.remote_workers, host, int(port_text), options.records)


def _report(options: argparse.Namespace) -> int:
    from loadgen.collect.record_files import records_file
    from loadgen.environments.from_runs import environment_folders
    from loadgen.report.build import exit_code
    from loadgen.report.rerender import RerenderError, rerender_run

    run_dir: Path = options.run_dir
    if not records_file(run_dir).exists() and environment_folders(run_dir) is not None:
        from loadgen.cli.environments import report_environments

        return report_environments(run_dir)  # each environment's reports, then the comparison
    try:
        report = rerender_run(run_dir)
    except RerenderError as exc:
        return fail(str(exc))
    print_verdict(report, run_dir)
    return exit_code(report)


def entry() -> None:
    """The `loadtest` command: main(), then out at once. A run's heap (Locust, numpy, matplotlib,
    every record) takes about half a second to tear down, which Ctrl-C should not wait for; the
    exporter's linger thread is waited for first, and every file was closed by the run."""
    code = main()
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    from servers.orphan_guard import close_orphan_guard

    close_orphan_guard()  # every server was stopped: it ends without a signal, before we do
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
