"""A Slack incoming-webhook stand-in on 127.0.0.1: it takes a POST of a message's JSON on its
one secret path (as Slack's `https://hooks.slack.com/services/T…/B…/…`), answers `ok` as
Slack does, and records what was posted. Another path is 404 (`no_service`), a body that is
not a message 400 (`invalid_payload`); ``fail_next(500, 503)`` makes the next posts answer
those codes first."""

from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from typing import Any

from distkpi_cli.local.standin_server import QuietHandler, StandInServer


class ChatStandIn(StandInServer):
    def __init__(self, port: int = 0) -> None:
        super().__init__(port)
        self.path = (
            f"/services/T{secrets.token_hex(4)}/B{secrets.token_hex(4)}/{secrets.token_hex(12)}"
        )
        self.messages: list[dict[str, Any]] = []
        self.refused = 0  # posts answered with an error
        self._scripted: deque[int] = deque()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The webhook's URL: the secret a stack keeps in Secrets Manager (``base_url``:
        where `/_standin/messages` answers what was posted, for `distkpi local` attached to
        `distkpi local up`)."""
        return self.base_url + self.path

    def fail_next(self, *codes: int) -> None:
        with self._lock:
            self._scripted.extend(codes)

    def handler(self) -> type[QuietHandler]:
        standin = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                found = self.path == "/_standin/messages"
                with standin._lock:
                    data = json.dumps(standin.messages if found else {"error": "no_service"})
                self.reply(200 if found else 404, data.encode())

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                code, text = standin._take(self.path, raw)
                self.reply(code, text.encode(), "text/plain")

        return Handler

    def _take(self, path: str, raw: bytes) -> tuple[int, str]:
        with self._lock:
            if self._scripted:
                self.refused += 1
                return self._scripted.popleft(), "scripted failure"
            if path != self.path:
                self.refused += 1
                return 404, "no_service"
            try:
                message = json.loads(raw)
            except ValueError:
                message = None
            if not isinstance(message, dict) or not (message.get("text") or message.get("blocks")):
                self.refused += 1
                return 400, "invalid_payload"
            self.messages.append(message)
            return 200, "ok"


class RemoteChat:
    """The chat stand-in of a running `distkpi local up`, read over HTTP."""

    def __init__(self, url: str) -> None:
        self.base_url = url

    @property
    def messages(self) -> list[dict[str, Any]]:
        import requests

        answer = requests.get(f"{self.base_url}/_standin/messages", timeout=10)
        answer.raise_for_status()
        found: list[dict[str, Any]] = answer.json()
        return found
