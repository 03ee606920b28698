"""What the local stand-ins of GitHub and of the chat's webhook share: an HTTP server on
127.0.0.1, in a thread of its own, whose handler logs nothing and answers a body with its
length."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def reply(
        self,
        code: int,
        data: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class StandInServer:
    """A stand-in's server: ``start`` serves the ``handler()`` a subclass gives."""

    def __init__(self, port: int = 0) -> None:
        self.port = port  # 0: any free one
        self._server: ThreadingHTTPServer | None = None

    def handler(self) -> type[QuietHandler]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        return self.base_url

    @property
    def stopped(self) -> bool:
        return self._server is None

    def start(self) -> str:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler())
        # a short poll: stop() waits up to one interval for the loop to notice
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
