"""A GitHub stand-in on 127.0.0.1: accepts and records commit statuses and label removals
from pull requests, and answers compare requests with the files it is given, like the REST
API."""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

STATUS_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/statuses/(?P<sha>[0-9a-f]{40})$"
)
LABEL_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/(?P<number>[0-9]+)/labels/(?P<label>[^/]+)$"
)
COMPARE_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/compare/(?P<range>[^/?]+)")
STATES = {"pending", "success", "failure", "error"}
MAX_COMPARE_FILES = 300  # GitHub lists at most this many files in a compare


class GitHubStandIn:
    """Records POST /repos/{owner}/{repo}/statuses/{sha}; 422 like GitHub on bad input.

    ``fail_next(500, 503)`` makes the next requests answer those codes first.
    """

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.statuses: list[dict[str, Any]] = []
        self.removed_labels: list[dict[str, Any]] = []
        # what GET /repos/{o}/{r}/compare/{base}...{head} lists (every range alike); None: 404
        self.changed_files: list[str] | None = None
        self.requests = 0
        self._scripted: deque[int] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def fail_next(self, *codes: int) -> None:
        with self._lock:
            self._scripted.extend(codes)

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def do_POST(self) -> None:
                auth = self.headers.get("Authorization")
                self._answer(*standin._handle(self.path, auth, self._body()))

            def do_GET(self) -> None:
                self._answer(*standin._compare(self.path, self.headers.get("Authorization")))

            def do_DELETE(self) -> None:
                auth = self.headers.get("Authorization")
                self._answer(*standin._remove_label(self.path, auth))

            def _answer(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _compare(self, path: str, auth: str | None) -> tuple[int, Any]:
        with self._lock:
            self.requests += 1
        if not COMPARE_PATH.match(path) or self.changed_files is None:
            return 404, {"message": "Not Found"}
        if self.token is not None and auth != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials"}
        files = [{"filename": name, "status": "modified"} for name in self.changed_files]
        return 200, {"status": "ahead", "files": files[:MAX_COMPARE_FILES]}

    def _remove_label(self, path: str, auth: str | None) -> tuple[int, Any]:
        """DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}, recorded."""
        with self._lock:
            self.requests += 1
        match = LABEL_PATH.match(path)
        if not match:
            return 404, {"message": "Not Found"}
        if self.token is not None and auth != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials"}
        removed = {
            "repo": f"{match['owner']}/{match['repo']}",
            "number": int(match["number"]),
            "label": unquote(match["label"]),
        }
        with self._lock:
            self.removed_labels.append(removed)
        return 200, []

    def _handle(self, path: str, auth: str | None, raw: bytes) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests += 1
            if self._scripted:
                return self._scripted.popleft(), {"message": "scripted failure"}
        match = STATUS_PATH.match(path)
        if not match:
            return 404, {"message": "Not Found"}
        if self.token is not None and auth != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials"}
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, {"message": "Problems parsing JSON"}
        problem = _invalid(body)
        if problem:
            return 422, {"message": "Validation Failed", "errors": [problem]}
        status = {
            "repo": f"{match['owner']}/{match['repo']}",
            "sha": match["sha"],
            "context": body.get("context", "default"),
            "state": body["state"],
            "description": body.get("description"),
            "target_url": body.get("target_url"),
        }
        with self._lock:
            self.statuses.append(status)
            status_id = len(self.statuses)
        return 201, {"id": status_id, **status}


def _invalid(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body must be an object"
    if body.get("state") not in STATES:
        return "state is not included in the list"
    description = body.get("description")
    if description is not None and len(description) > 140:
        return "description is too long (maximum is 140 characters)"
    return None
