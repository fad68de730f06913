"""Connecting to Grafana with grafana-client, and its failures as one-line reasons.

The token is read from the environment variable the user names (`--token-env`, `grafana.token_env`)
and handed to grafana-client, which sends it as `Authorization: Bearer <token>`; it is never
written anywhere. A URL with `user:password@` in it may stand in for a token (basic auth).
Both are registered for redaction, and every reason built here from Grafana's answer is
redacted before it is cut to one line (a proxy may echo the Authorization header back).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Protocol, TypedDict, cast
from urllib.parse import urlsplit

import requests.exceptions
from grafana_client.api import GrafanaApi
from grafana_client.client import (
    GrafanaClientError,
    GrafanaException,
    GrafanaServerError,
    GrafanaUnauthorizedError,
)

from kernel.redact import redact, register_secret


class GrafanaSetupError(Exception):
    """Grafana cannot be used at all (bad URL, no credentials); the message is the reason."""


# A dashboard's JSON model: Grafana's schema (hundreds of keys, by panel type and version), not
# ours. It is read, checked for the few keys a push needs (push.load_dashboard) and sent on whole.
Dashboard = dict[str, Any]


class DashboardUpdate(TypedDict):
    """The body of Grafana's `POST /api/dashboards/db`: create or update a dashboard by its uid."""

    dashboard: Dashboard
    folderUid: str
    overwrite: bool
    message: str  # the version's note in the dashboard's history


# The part of grafana-client's API used here, typed (grafana-client's own methods are not).
class FolderApi(Protocol):
    def get_all_folders(self, parent_uid: str | None = None) -> Any: ...

    def create_folder(self, title: str, uid: str | None = None, parent_uid: str | None = None) -> Any: ...


class DashboardApi(Protocol):
    def get_dashboard(self, dashboard_uid: str) -> Any: ...

    def update_dashboard(self, dashboard: DashboardUpdate) -> Any: ...


class AnnotationsApi(Protocol):
    def add_annotation(
        self,
        dashboard_id: int | None = None,
        dashboard_uid: str | None = None,
        panel_id: int | None = None,
        time_from: int | None = None,
        time_to: int | None = None,
        tags: list[str] | None = None,
        text: str | None = None,
    ) -> Any: ...


class Grafana(Protocol):
    folder: FolderApi
    dashboard: DashboardApi
    annotations: AnnotationsApi


def has_url_credentials(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.username and parts.password)


def read_token(token_env: str, environ: Mapping[str, str]) -> str | None:
    """The token from the named variable; None when it is unset or blank."""
    token = environ.get(token_env, "").strip()
    register_secret(token)
    return token or None


def check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GrafanaSetupError(f"Grafana URL {url!r} must look like http://HOST:PORT")


def connect(url: str, token: str | None, token_env: str, timeout: float) -> Grafana:
    """A client for `url`, authenticated by `token`, or by credentials in the URL."""
    check_url(url)
    register_secret(token)
    parts = urlsplit(url)
    register_secret(parts.password)
    if parts.username and parts.password:  # what a Basic Authorization header carries
        register_secret(base64.b64encode(f"{parts.username}:{parts.password}".encode()).decode())
    if token is None and not has_url_credentials(url):
        raise GrafanaSetupError(
            f"environment variable {token_env} is not set: it must hold a Grafana service-account token"
        )
    api = GrafanaApi.from_url(url, credential=token, timeout=timeout)
    return cast(Grafana, api)


def close(api: Grafana) -> None:
    """Close the client's HTTP session (grafana-client keeps one open)."""
    session = getattr(getattr(api, "client", None), "s", None)
    if session is not None:
        session.close()


def public_url(url: str) -> str:
    """`url` without credentials, query or trailing slash: safe to print."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{parts.scheme}://{netloc}{parts.path}".rstrip("/")


def _one_line(text: object, limit: int = 200) -> str:
    # Redact first: a cut made first could leave half a token that no longer matches.
    line = re.sub(r"\s+", " ", redact(str(text))).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _message(exc: GrafanaException) -> str:
    response = exc.response
    if isinstance(response, dict) and response.get("message"):
        return _one_line(response["message"])
    return _one_line(exc.message)


def _cause(exc: BaseException) -> str:
    """'Connection refused' out of urllib3's long 'Max retries exceeded ... [Errno 111] ...'."""
    found = re.search(r"\[Errno -?\d+\] ([^'\")]+)", redact(str(exc)))
    return found.group(1).strip() if found else type(exc).__name__


def describe_error(exc: BaseException, url: str, token_env: str, timeout: float) -> str | None:
    """A one-line reason for the ways a Grafana call is expected to fail; None for anything else."""
    where = public_url(url)
    if isinstance(exc, GrafanaUnauthorizedError):
        refused = "refused the credentials (401 Unauthorized)"
        return f"Grafana at {where} {refused}: check the token in {token_env}"
    if isinstance(exc, GrafanaClientError) and exc.status_code == 403:
        return (
            f"the token in {token_env} may not do this on Grafana at {where} (403 Forbidden: {_message(exc)})"
        )
    if isinstance(exc, GrafanaClientError | GrafanaServerError):
        return f"Grafana at {where} answered {exc.status_code}: {_message(exc)}"
    if isinstance(exc, GrafanaException):
        return f"cannot reach Grafana at {where}: {_message(exc)}"
    if isinstance(exc, requests.exceptions.Timeout):
        return f"Grafana at {where} did not answer within {timeout:g} s"
    if isinstance(exc, requests.exceptions.RequestException | OSError):
        return f"cannot reach Grafana at {where}: {_cause(exc)}"
    if isinstance(exc, ValueError):  # a 200 that is not JSON: not Grafana's API at that URL
        return f"{where} did not answer like Grafana's HTTP API (is the URL right?)"
    return None
