"""`--local` for the history commands: the table of the running `distkpi local up`, or else
the state folder's, loaded into moto in this process (and saved back after a write, such
as `baseline reset`, holding the folder meanwhile)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import requests

from distkpi.adapters.dynamo import DynamoTable
from distkpi_cli.local.aws_stack import BUCKET, REGION, TABLE, LocalAws
from distkpi_cli.local.handlers import project_root
from distkpi_cli.local.state import StateError, StateFolder
from distkpi_cli.local.template import load_template, table_definition


@dataclass(frozen=True)
class RunningStack:
    """What `distkpi local up` writes beside its state folder while it is up."""

    endpoint: str
    github: str
    pid: int
    aws: dict[str, Any]
    chat: str = ""  # the chat stand-in's URL, for reading back what it was posted

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "github": self.github,
            "pid": self.pid,
            "aws": self.aws,
            "chat": self.chat,
        }


def running(state: StateFolder) -> RunningStack | None:
    """The stack `distkpi local up` keeps for ``state``, if it is up and answers."""
    try:
        data = json.loads(state.up_file.read_text())
        up = RunningStack(
            str(data["endpoint"]),
            str(data["github"]),
            int(data["pid"]),
            data["aws"],
            str(data.get("chat") or ""),
        )
        os.kill(up.pid, 0)
        requests.get(f"{up.endpoint}/moto-api/", timeout=2)
    except (OSError, ValueError, KeyError, TypeError, requests.RequestException):
        return None
    return up


@contextmanager
def local_table(state: StateFolder, *, write: bool = False) -> Iterator[DynamoTable]:
    """The local history's table; StateError when there is neither a stack nor a state."""
    up = running(state)
    if up is not None:
        with mock.patch.dict(os.environ, LocalAws(**up.aws).environment()):
            yield DynamoTable(TABLE, _resource(up.endpoint).Table(TABLE))
        return
    if not state.path.exists():
        raise StateError(
            f"no local state: no `distkpi local up` is running for {state.path}, and the "
            "folder does not exist (run `distkpi local` first, or give --state)"
        )
    with state.locked(), _in_process_aws() as client:
        table = table_definition(_template(), "RunsTable", TABLE)
        client("dynamodb").create_table(**table)
        client("s3").create_bucket(Bucket=BUCKET)
        state.load(client, TABLE, BUCKET)
        yield DynamoTable(TABLE, _resource(None).Table(TABLE))
        if write:
            state.save(client, TABLE, BUCKET)


def _template() -> dict[str, Any]:
    return load_template((project_root() / "template.yaml").read_text())


def _resource(endpoint: str | None) -> Any:
    import boto3

    return boto3.resource("dynamodb", endpoint_url=endpoint, region_name=REGION)


@contextmanager
def _in_process_aws() -> Iterator[Any]:
    import boto3
    from moto import mock_aws

    local = {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
    }
    with mock.patch.dict(os.environ, local), mock_aws():
        os.environ.pop("AWS_ENDPOINT_URL", None)
        os.environ.pop("AWS_SESSION_TOKEN", None)
        yield lambda service: boto3.client(service, region_name=REGION)
