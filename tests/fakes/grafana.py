"""A recorded fake of Grafana's HTTP API, for the dashboard-push and annotation tests.

Why a fake: no Grafana binary (and no Docker engine to run one) is available on this machine or
in CI, so the tests cannot talk to a real Grafana. This is the smallest stand-in that still lets
the real grafana-client make real HTTP requests: a threaded HTTP server on 127.0.0.1 (a free
port) that implements only the endpoints loadtest calls, keeps their state in memory, checks the
requests the way Grafana does, and answers with the status codes and JSON shapes of Grafana's
HTTP API documentation (Folder, Dashboard and Annotations APIs; Grafana 11):

  GET  /api/health                       {"database": "ok", "version": ...} (no auth)
  GET  /api/frontend/settings            {"buildInfo": {...}} (grafana-client's health check)
  GET  /api/folders                      [{"id", "uid", "title"}]
  GET  /api/folders/<uid>                the folder, or 404 {"message": "folder not found"}
  POST /api/folders                      {"title", "uid"?} -> the folder; 409 on a uid or title clash
  POST /api/dashboards/db                {"dashboard", "folderUid", "overwrite", "message"} -> {"id", "uid",
                                         "url", "status": "success", "version", "slug", "folderUid"};
                                         400 empty title / bad uid / unknown folder, 412 version-mismatch
  GET  /api/dashboards/uid/<uid>         {"dashboard", "meta"}, or 404 {"message": "Dashboard not found"}
  POST /api/annotations                  {"time", "timeEnd", "tags", "text", "dashboardUID"?}
                                         -> {"message": "Annotation added", "id"}; 400 when text is empty
  GET  /api/annotations?tags=..&limit=.. the annotations that carry every tag given

Every request is recorded (method, path, query, JSON body, Authorization header) before it is
answered, so tests can assert the exact requests. Requests without the expected credentials get
Grafana's 401 answer. Anything else is a 404 like Grafana's.

`echo=Echo(status, as_json)` plays a misbehaving proxy in front of Grafana: every API request
(after the credential check) is answered `status` with a body that echoes the request's headers,
Authorization included, as JSON `{"message": ...}` or as plain text. No real proxy is at hand
that does this on purpose; the fault is the body's content, which this reproduces byte for byte.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

VERSION = "11.3.0"
UID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any  # the decoded JSON body, or None
    authorization: str | None
    status: int = 0  # what the fake answered


@dataclass(frozen=True)
class Echo:
    """Answer every API request `status` with its headers echoed in the body: `template` is
    formatted with `headers` (all of them, Authorization first) and `credential` (the bare token
    or Basic value of the Authorization header)."""

    status: int = 502
    as_json: bool = True
    template: str = "upstream connect error; request headers: {headers}"


@dataclass
class _State:
    folders: dict[str, dict[str, Any]] = field(default_factory=dict)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)  # uid -> {"dashboard", "meta"}
    annotations: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGrafana:
    """`with FakeGrafana(token="t") as grafana:` serves on `grafana.url` until the block ends."""

    def __init__(
        self, token: str | None = "test-token", basic: tuple[str, str] | None = None, echo: Echo | None = None
    ) -> None:
        self.echo = echo
        self.accepted: set[str] = set()
        if token is not None:
            self.accepted.add(f"Bearer {token}")
        if basic is not None:
            self.accepted.add("Basic " + base64.b64encode(":".join(basic).encode()).decode())
        self.requests: list[Recorded] = []
        self.state = _State()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> FakeGrafana:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-grafana", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        assert self._server is not None, "use FakeGrafana as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # ---- what tests read ---------------------------------------------------------------------

    def calls(self, method: str, path: str) -> list[Recorded]:
        """Recorded requests with this method whose path starts with `path`."""
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path.startswith(path)]

    @property
    def annotations(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(item) for item in self.state.annotations]

    def add_folder(self, title: str, uid: str) -> dict[str, Any]:
        """Seed a folder, as if someone had made it in Grafana's UI."""
        with self._lock:
            return self._create_folder(title, uid)

    # ---- the API -----------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        with self._lock:
            return self._route(method, path, query, body)

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        if (method, path) == ("GET", "/api/folders"):
            return 200, [
                {"id": f["id"], "uid": f["uid"], "title": f["title"]} for f in self.state.folders.values()
            ]
        if method == "GET" and path.startswith("/api/folders/"):
            folder = self.state.folders.get(path.removeprefix("/api/folders/"))
            return (200, folder) if folder else (404, {"message": "folder not found", "status": "not-found"})
        if (method, path) == ("POST", "/api/folders"):
            return self._post_folder(body)
        if (method, path) == ("POST", "/api/dashboards/db"):
            return self._post_dashboard(body)
        if method == "GET" and path.startswith("/api/dashboards/uid/"):
            found = self.state.dashboards.get(path.removeprefix("/api/dashboards/uid/"))
            return (200, found) if found else (404, {"message": "Dashboard not found"})
        if (method, path) == ("POST", "/api/annotations"):
            return self._post_annotation(body)
        if (method, path) == ("GET", "/api/annotations"):
            return self._find_annotations(query)
        if (method, path) == ("GET", "/api/frontend/settings"):
            return 200, {"buildInfo": {"version": VERSION, "commit": "fake", "edition": "Open Source"}}
        return 404, {"message": "Not found"}

    def _create_folder(self, title: str, uid: str) -> dict[str, Any]:
        folder_id, self.state.next_id = self.state.next_id, self.state.next_id + 1
        stamp = _now()
        folder = {
            "id": folder_id,
            "uid": uid,
            "title": title,
            "url": f"/dashboards/f/{uid}/{_slug(title)}",
            "hasAcl": False,
            "canSave": True,
            "canEdit": True,
            "canAdmin": True,
            "canDelete": True,
            "createdBy": "admin",
            "created": stamp,
            "updatedBy": "admin",
            "updated": stamp,
            "version": 1,
        }
        self.state.folders[uid] = folder
        return folder

    def _post_folder(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not str(body.get("title", "")).strip():
            return 400, {"message": "folder title cannot be empty"}
        uid = str(body.get("uid") or f"f{self.state.next_id:08d}")
        if not UID.match(uid):
            return 400, {"message": "uid contains illegal characters"}
        if uid in self.state.folders:
            return 409, {"message": "a folder with the same uid already exists"}
        if any(f["title"] == body["title"] for f in self.state.folders.values()):
            return 409, {"message": "a folder with the same name already exists"}
        return 200, self._create_folder(str(body["title"]), uid)

    def _post_dashboard(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("dashboard"), dict):
            return 400, {"message": "bad request data"}
        model = dict(body["dashboard"])
        title = str(model.get("title") or "").strip()
        if not title:
            return 400, {"message": "Dashboard title cannot be empty", "status": "empty-name"}
        uid = model.get("uid") or f"d{self.state.next_id:08d}"
        if not isinstance(uid, str) or not UID.match(uid):
            return 400, {"message": "uid contains illegal characters", "status": "invalid-uid"}
        folder_uid = body.get("folderUid") or ""
        if folder_uid and folder_uid not in self.state.folders:
            return 400, {"message": "folder not found", "status": "not-found"}
        existing = self.state.dashboards.get(uid)
        overwrite = body.get("overwrite") is True
        if existing and not overwrite and model.get("version") != existing["dashboard"]["version"]:
            return 412, {
                "message": "The dashboard has been changed by someone else",
                "status": "version-mismatch",
            }
        for other_uid, other in self.state.dashboards.items():
            same_place = other["meta"]["folderUid"] == folder_uid and other["dashboard"]["title"] == title
            if other_uid != uid and same_place and not overwrite:
                return 412, {
                    "message": "A dashboard with the same name in the folder already exists",
                    "status": "name-exists",
                }
        if existing:
            dashboard_id, version = existing["dashboard"]["id"], existing["dashboard"]["version"] + 1
        else:
            dashboard_id, version = self.state.next_id, 1
            self.state.next_id += 1
        slug, url = _slug(title), f"/d/{uid}/{_slug(title)}"
        model.update(id=dashboard_id, uid=uid, version=version)
        self.state.dashboards[uid] = {
            "dashboard": model,
            "meta": {
                "slug": slug,
                "url": url,
                "folderUid": folder_uid,
                "version": version,
                "isStarred": False,
            },
        }
        return 200, {
            "id": dashboard_id,
            "uid": uid,
            "url": url,
            "status": "success",
            "version": version,
            "slug": slug,
            "folderUid": folder_uid,
        }

    def _post_annotation(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return 400, {"message": "bad request data"}
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            return 400, {"message": "bad request data"}
        if not body.get("text"):
            return 400, {"message": "Failed to save annotation"}
        start = int(body.get("time") or datetime.now(UTC).timestamp() * 1000)
        item = {
            "id": self.state.next_id,
            "dashboardUID": body.get("dashboardUID") or None,
            "panelId": body.get("panelId") or 0,
            "time": start,
            "timeEnd": int(body.get("timeEnd") or start),  # Grafana stores a point as time == timeEnd
            "tags": tags,
            "text": body["text"],
        }
        self.state.next_id += 1
        self.state.annotations.append(item)
        return 200, {"message": "Annotation added", "id": item["id"]}

    def _find_annotations(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        wanted = set(query.get("tags", []))
        limit = int(query.get("limit", ["100"])[0])
        found = [a for a in self.state.annotations if wanted <= set(a["tags"])]
        return 200, sorted(found, key=lambda a: -a["time"])[:limit]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGrafana
    protocol_version = "HTTP/1.1"  # keep-alive, as Grafana serves it

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body, bad_json = (json.loads(raw) if raw else None), False
        except json.JSONDecodeError:
            body, bad_json = raw.decode(errors="replace"), True
        authorization = self.headers.get("Authorization")
        query = parse_qs(parts.query)
        answer: object  # text, or what goes out as JSON
        if parts.path == "/api/health":
            status, answer = 200, {"commit": "fake", "database": "ok", "version": VERSION}
        elif authorization not in self.fake.accepted:
            status, answer = (
                401,
                {"message": "Invalid API key", "messageId": "api-key.invalid", "statusCode": 401},
            )
        elif self.fake.echo is not None:
            status, answer = self.fake.echo.status, self._echoed(self.fake.echo)
        elif bad_json:
            status, answer = 400, {"message": "bad request data"}
        else:
            status, answer = self.fake.handle(self.command, parts.path, query, body)
        with self.fake._lock:
            self.fake.requests.append(Recorded(self.command, parts.path, query, body, authorization, status))
        text = isinstance(answer, str)
        payload = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _echoed(self, echo: Echo) -> Any:
        # Authorization first: a one-line reason cut at 200 characters must not hide the leak.
        items = sorted(self.headers.items(), key=lambda item: item[0].lower() != "authorization")
        headers = "; ".join(f"{name}: {value}" for name, value in items)
        credential = (self.headers.get("Authorization") or "").rpartition(" ")[2]
        line = echo.template.format(headers=headers, credential=credential)
        return {"message": line, "headers": dict(self.headers.items())} if echo.as_json else line

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
