"""Names from a run folder (S3 keys, file names the code under test chose) joined onto a
local folder: never outside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from distkpi_cli.confined import UnsafeNameError, confined
from distkpi_cli.local.aws_stack import BUCKET
from distkpi_cli.local.dispatch import Dispatcher
from tests.conftest import offline_aws


@pytest.mark.parametrize(
    "name",
    ["/etc/cron.d/x", "../x", "a/../../x", "a//b", "./a", "a/", "", "a\\..\\b", "a\nb", "a\0b"],
)
def test_a_name_that_leaves_its_folder_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(UnsafeNameError):
        confined(tmp_path, name)


def test_a_plain_relative_name_is_joined(tmp_path: Path) -> None:
    assert (
        confined(tmp_path, "1x1/logs/trainer-0.log") == tmp_path / "1x1" / "logs" / "trainer-0.log"
    )


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    offline_aws(monkeypatch)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_the_dispatcher_copies_no_key_out_of_the_run_folder(s3: Any, tmp_path: Path) -> None:
    """Given a run folder holding what an attacker with the stack's keys could PUT (a key
    with an absolute path after runs/<run>/, one climbing out with ..), when the run is
    copied out, then only its plain keys land, inside the folder, and the rest is said."""
    outside = tmp_path / "outside" / "owned"
    for key in (f"runs/r1//{outside}", "runs/r1/../../escaped", "runs/r1/1x1/node-0.json"):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"data")
    said: list[str] = []
    stack = SimpleNamespace(aws=SimpleNamespace(client=boto3.client), say=said.append)
    out = tmp_path / "out"

    folder = Dispatcher(stack, out, None).download("runs/r1/")  # type: ignore[arg-type]

    assert not outside.exists() and not (tmp_path / "escaped").exists()
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == [
        "runs/r1/1x1/node-0.json"
    ]
    assert folder == out / "runs" / "r1"
    assert (
        len(said) == 1 and f"runs/r1//{outside}" in said[0] and "runs/r1/../../escaped" in said[0]
    )
