"""`loadtest dashboards push --grafana-url URL --token-env NAME [--folder F] [--file PATH]`.

Creates or updates the dashboard (by its uid) in a Grafana folder and prints its URL. Exit 0 on
success, 2 with a one-line reason on stderr otherwise. The token is read from the environment
variable NAME, never from the command line (where `ps` and shell history would keep it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from loadgen.cli.common import EXIT_PASS, fail

DEFAULT_FILE = Path("dashboards") / "loadtest.json"
DEFAULT_TIMEOUT_S = 10.0


def add_parser(subparsers: Any) -> None:
    """Register `dashboards` (with its `push` action) on the CLI's subparsers."""
    dashboards = subparsers.add_parser("dashboards", help="Grafana dashboards: push the loadtest dashboard")
    actions = dashboards.add_subparsers(dest="dashboards_action")
    push = actions.add_parser(
        "push", help="create or update the dashboard in a Grafana folder (same uid every time)"
    )
    push.add_argument("--grafana-url", required=True, metavar="URL", help="e.g. http://127.0.0.1:3000")
    push.add_argument(
        "--token-env",
        default="GRAFANA_TOKEN",
        metavar="NAME",
        help="environment variable holding a Grafana service-account token (default GRAFANA_TOKEN)",
    )
    push.add_argument(
        "--folder", default="loadtest", help="Grafana folder, created if missing (default loadtest)"
    )
    push.add_argument(
        "--file",
        type=Path,
        metavar="PATH",
        help=f"dashboard JSON (default {DEFAULT_FILE}, from here or from the loadtest checkout)",
    )
    push.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="seconds to wait for each answer",
    )


def handle(options: argparse.Namespace) -> int:
    if getattr(options, "dashboards_action", None) != "push":
        return fail("say what to do: `loadtest dashboards push --grafana-url URL --token-env NAME`")
    from loadgen.grafana.connection import GrafanaSetupError, close, connect, describe_error, read_token
    from loadgen.grafana.push import DashboardFileError, load_dashboard, push_dashboard

    url: str = options.grafana_url
    try:
        dashboard = load_dashboard(options.file or _default_file())
        token = read_token(options.token_env, os.environ)
        api = connect(url, token, options.token_env, options.timeout)
    except (DashboardFileError, GrafanaSetupError) as exc:
        return fail(str(exc))
    try:
        result = push_dashboard(api, dashboard, grafana_url=url, folder=options.folder)
    except Exception as exc:
        reason = describe_error(exc, url, options.token_env, options.timeout)
        return fail(reason or f"push failed: {type(exc).__name__}: {exc}")
    finally:
        close(api)
    made = "created folder" if result.folder_created else "folder"
    print(
        f"loadtest: dashboard '{result.title}' (uid {result.uid}) is at version {result.version} "
        f"in {made} '{result.folder_title}'",
        file=sys.stderr,
    )
    print(result.url)
    return EXIT_PASS


def _default_file() -> Path:
    """dashboards/loadtest.json here, else the one in the checkout loadtest runs from."""
    if DEFAULT_FILE.exists():
        return DEFAULT_FILE
    checkout = Path(__file__).resolve().parents[1] / DEFAULT_FILE
    return checkout if checkout.exists() else DEFAULT_FILE
