"""moto's server for the local stack, answering only the stack: every AWS call must be
signed with the access key of the stack's own IAM user (moto's IAM authentication, on
once the stack is provisioned), and moto's own API (/moto-api/: reset, state dumps, its
authentication switch) needs the stack's secret in a header. The code under test, which
reaches 127.0.0.1 like everything else on the machine, holds neither."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import requests
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

STACK_KEY_HEADER = "X-Distkpi-Stack-Key"
USER = "distkpi-local-stack"
EVERYTHING = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}
StartResponse = Callable[[str, list[tuple[str, str]]], Any]


@dataclass(frozen=True)
class StackKeys:
    access_key_id: str
    secret_access_key: str


class _Front:
    def __init__(self, app: Callable[..., Iterable[bytes]], secret: Callable[[], str | None]):
        self.app, self.secret = app, secret

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith("/moto-api"):
            secret, given = self.secret(), str(environ.get("HTTP_X_DISTKPI_STACK_KEY", ""))
            if secret is not None and not hmac.compare_digest(secret, given):
                return _refuse(start_response, "moto's API answers the local stack only")
        elif self.secret() is not None and not environ.get("HTTP_AUTHORIZATION"):
            return _refuse(start_response, "unsigned request: the local stack signs its own")
        return self.app(environ, start_response)


def _refuse(start_response: StartResponse, why: str) -> list[bytes]:
    body = json.dumps({"message": why}).encode()
    start_response("403 Forbidden", [("Content-Type", "application/json")])
    return [body]


class GuardedMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer behind the front; open until ``lock`` (the stack provisioned)."""

    def __init__(self, ip_address: str, port: int) -> None:
        super().__init__(ip_address=ip_address, port=port, verbose=False)
        self.keys: StackKeys | None = None

    def _server_entry(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        app = _Front(DomainDispatcherApplication(create_backend_app), self._secret)
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    def _secret(self) -> str | None:
        return None if self.keys is None else self.keys.secret_access_key

    def lock(self, endpoint: str, client: Callable[[str], Any]) -> StackKeys:
        """The stack's IAM user, allowed everything, made while moto still takes any call;
        then moto's IAM authentication on: from here on, only its key is answered."""
        iam = client("iam")
        iam.create_user(UserName=USER)
        iam.put_user_policy(
            UserName=USER, PolicyName="everything", PolicyDocument=json.dumps(EVERYTHING)
        )
        made = iam.create_access_key(UserName=USER)["AccessKey"]
        self.keys = StackKeys(made["AccessKeyId"], made["SecretAccessKey"])
        set_authentication(endpoint, self.keys, on=True)
        return self.keys

    def stop(self) -> None:
        if self.keys is not None:  # moto's switch is per process: off, as it was
            set_authentication(self.url, self.keys, on=False)
            self.keys = None
        super().stop()

    @property
    def url(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"


def set_authentication(endpoint: str, keys: StackKeys, *, on: bool) -> None:
    """moto's IAM authentication for every call from now (on), or for none (off)."""
    answer = requests.post(
        f"{endpoint}/moto-api/reset-auth",
        data=b"0" if on else b"inf",
        headers={STACK_KEY_HEADER: keys.secret_access_key},
        timeout=10,
    )
    answer.raise_for_status()
