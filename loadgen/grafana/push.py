"""`loadtest dashboards push`: create or update the dashboard in a Grafana folder.

The dashboard keeps the `uid` of its JSON file, so every push updates the same dashboard (same
URL, version + 1) instead of adding a copy; `overwrite: true` lets a push replace edits made in
Grafana's UI. The folder is found by title and created when missing, with a uid derived from the
title, so it is stable across pushes and Grafana instances too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from loadgen.grafana.connection import Dashboard, Grafana, public_url

DEFAULT_FOLDER = "loadtest"
UID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,40}$")  # what Grafana accepts as a uid


class DashboardFileError(ValueError):
    """The dashboard file cannot be pushed; the message says why and where."""


@dataclass(frozen=True)
class PushResult:
    uid: str
    title: str
    url: str  # the dashboard's full URL, without credentials
    version: int
    folder_uid: str
    folder_title: str
    folder_created: bool


def load_dashboard(path: Path) -> Dashboard:
    """The dashboard model in `path`, checked for what a push needs (uid, title, panels)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DashboardFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise DashboardFileError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise DashboardFileError(f"{path}: a dashboard is a JSON object, not {type(data).__name__}")
    uid = data.get("uid")
    if not isinstance(uid, str) or not UID_PATTERN.match(uid):
        raise DashboardFileError(f"{path}: needs a 'uid' of 1-40 letters, digits, '-' or '_' (got {uid!r})")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise DashboardFileError(f"{path}: needs a non-empty 'title'")
    panels = data.get("panels")
    if not isinstance(panels, list) or not panels:
        raise DashboardFileError(f"{path}: has no 'panels'")
    return data


def folder_uid_for(title: str) -> str:
    """A stable uid for a folder title: 'Load tests' -> 'load-tests'."""
    slug = re.sub(r"[^a-z0-9_]+", "-", title.lower()).strip("-")[:40]
    return slug or "loadtest"


def ensure_folder(api: Grafana, title: str) -> tuple[str, bool]:
    """The uid of the top-level folder called `title`, creating it if needed; and whether it was."""
    wanted = folder_uid_for(title)
    for folder in api.folder.get_all_folders() or []:
        if isinstance(folder, dict) and (folder.get("title") == title or folder.get("uid") == wanted):
            return str(folder["uid"]), False
    created = api.folder.create_folder(title, uid=wanted)
    return str(created["uid"]), True


def push_dashboard(
    api: Grafana, dashboard: Dashboard, *, grafana_url: str, folder: str = DEFAULT_FOLDER
) -> PushResult:
    """Create or update `dashboard` (by its uid) in `folder`; Grafana's errors propagate."""
    folder_uid, folder_created = ensure_folder(api, folder)
    model = {key: value for key, value in dashboard.items() if key != "version"}
    model["id"] = None  # Grafana matches on uid; a numeric id from another instance would clash
    answer = api.dashboard.update_dashboard(
        {
            "dashboard": model,
            "folderUid": folder_uid,
            "overwrite": True,
            "message": "loadtest dashboards push",
        }
    )
    path = str(answer.get("url") or f"/d/{model['uid']}")
    base = _origin(grafana_url)
    return PushResult(
        uid=str(answer.get("uid", model["uid"])),
        title=str(model["title"]),
        url=base + path,
        version=int(answer.get("version", 0)),
        folder_uid=folder_uid,
        folder_title=folder,
        folder_created=folder_created,
    )


def _origin(url: str) -> str:
    """scheme://host:port of `url`: Grafana's answer carries its own sub-path (root_url)."""
    public = public_url(url)
    scheme, _, rest = public.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"
