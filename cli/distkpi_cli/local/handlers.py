"""The real Lambda handlers (functions/<name>/app.py), called in-process with real event shapes."""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from distkpi.domain.github.webhook import sign
from distkpi.exceptions import DistkpiError


def project_root() -> Path:
    """The checkout this package is installed from (pip install -e .)."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "functions").is_dir() or not (root / "template.yaml").is_file():
        raise DistkpiError(
            "distkpi local needs a checkout of the project (functions/, template.yaml)"
        )
    return root


@dataclass
class LambdaContext:
    function_name: str = "distkpi-local"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:000000000000:function:distkpi-local"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    # what Lambda says is left of the invocation, each time it is asked
    remaining_ms: Callable[[], int] = field(default=lambda: 300_000)  # the sweeper's timeout

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms()


def load_handlers(root: Path) -> dict[str, ModuleType]:
    handlers = {}
    for name in ("webhook", "launcher", "collector", "job_events", "sweeper", "deadlines"):
        spec = importlib.util.spec_from_file_location(
            f"distkpi_local_{name}", root / "functions" / name / "app.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        handlers[name] = module
    _logs_to_stderr()
    return handlers


def _logs_to_stderr() -> None:
    """The handlers' Powertools logger writes to stdout, as Lambda wants; here stdout is the
    command's result (one JSON document with --json), so its lines go to stderr: whichever
    sys.stderr is current when a line is written."""
    import logging

    from distkpi.entry.observability import SERVICE

    for handler in logging.getLogger(SERVICE).handlers:
        if type(handler) is logging.StreamHandler and handler.stream is not _STDERR:
            with handler.lock or contextlib.nullcontext():
                handler.stream = _STDERR  # not setStream: that flushes the old stream


class _CurrentStderr:
    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


_STDERR = _CurrentStderr()


def signed_function_url_event(secret: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """A GitHub delivery as a Lambda Function URL event, signed like GitHub signs it."""
    return function_url_event({**headers, "X-Hub-Signature-256": sign(secret.encode(), body)}, body)


def function_url_event(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """A delivery (signed by its sender, or not) as a Lambda Function URL event."""
    all_headers = {k.lower(): v for k, v in headers.items()}
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/",
        "rawQueryString": "",
        "headers": all_headers,
        "requestContext": {
            "http": {
                "method": "POST",
                "path": "/",
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "GitHub-Hookshot/local",
            },
            "requestId": "local",
            "routeKey": "$default",
            "stage": "$default",
            "domainName": "127.0.0.1",
        },
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def pull_request_delivery(
    repo: str, sha: str, base_sha: str, delivery: str
) -> tuple[dict[str, str], bytes]:
    owner, name = repo.split("/")
    repository = {
        "name": name,
        "full_name": repo,
        "owner": {"login": owner},
        "default_branch": "develop",
    }
    payload = {
        "action": "opened",
        "number": 1,
        "pull_request": {
            "number": 1,
            "state": "open",
            "title": "distkpi local",
            "head": {"ref": "local-change", "sha": sha, "repo": repository},
            "base": {"ref": "develop", "sha": base_sha, "repo": repository},
        },
        "repository": repository,
        "sender": {"login": owner},
    }
    return _headers("pull_request", delivery), json.dumps(payload).encode()


def push_delivery(repo: str, sha: str, before: str, delivery: str) -> tuple[dict[str, str], bytes]:
    owner, name = repo.split("/")
    payload = {
        "ref": "refs/heads/develop",
        "before": before,
        "after": sha,
        "created": False,
        "deleted": False,
        "forced": False,
        "repository": {"name": name, "full_name": repo, "owner": {"login": owner}},
        "pusher": {"name": owner},
        "sender": {"login": owner},
        "head_commit": {"id": sha, "message": "distkpi local push"},
    }
    return _headers("push", delivery), json.dumps(payload).encode()


def _headers(event: str, delivery: str) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/local",
    }


def batch_job_event(
    job_id: str, job_name: str, queue: str, status: str, reason: str
) -> dict[str, Any]:
    """What EventBridge delivers when Batch moves a job to ``status`` (FAILED, SUCCEEDED)."""
    return {
        "version": "0",
        "id": job_id,
        "detail-type": "Batch Job State Change",
        "source": "aws.batch",
        "account": "000000000000",
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "region": "us-east-1",
        "resources": [f"arn:aws:batch:us-east-1:000000000000:job/{job_id}"],
        "detail": {
            "jobArn": f"arn:aws:batch:us-east-1:000000000000:job/{job_id}",
            "jobName": job_name,
            "jobId": job_id,
            "jobQueue": queue,
            "status": status,
            "statusReason": reason,
        },
    }
