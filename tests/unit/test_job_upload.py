"""The reference job's last steps: its files, its manifest, and the main node's wait."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.conftest import offline_aws

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "s3://runs-bucket/runs/r1/2x8-1ps/"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(ROOT / "infra" / "job"))
    offline_aws(monkeypatch)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket="runs-bucket")
        yield client


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def put_manifest(s3: Any, node: int) -> None:
    s3.put_object(Bucket="runs-bucket", Key=f"runs/r1/2x8-1ps/node-{node}.json", Body=b"{}")


def test_the_manifest_names_only_the_files_that_exist(s3: Any, tmp_path: Path) -> None:
    from distkpi_job.upload import NodeFile, upload

    log = tmp_path / "trainer-0.log"
    log.write_text("hello\n")
    files = [
        NodeFile(log, "trainer", 0, "log"),
        NodeFile(tmp_path / "trainer-0.gpu.csv", "trainer", 0, "gpu_memory"),
    ]
    upload(PREFIX, 0, files, {"schema": 1, "node": 0, "files": []})
    body = s3.get_object(Bucket="runs-bucket", Key="runs/r1/2x8-1ps/node-0.json")["Body"]
    assert json.loads(body.read())["files"] == [
        {"path": "logs/trainer-0.log", "role": "trainer", "rank": 0, "kind": "log"}
    ]
    log_key = "runs/r1/2x8-1ps/logs/trainer-0.log"
    assert s3.get_object(Bucket="runs-bucket", Key=log_key)["Body"].read() == b"hello\n"


def test_the_main_node_waits_until_the_others_have_reported(s3: Any) -> None:
    from distkpi_job.upload import wait_for_manifests

    time = FakeTime()
    put_manifest(s3, 1)

    def sleep(seconds: float) -> None:
        time.sleep(seconds)
        put_manifest(s3, 2)  # node 2 reports while the main node waits

    missing = wait_for_manifests(PREFIX, [1, 2], 60, clock=time.clock, sleep=sleep)
    assert missing == []
    assert time.sleeps == [2.0]


def test_the_main_node_gives_up_on_a_node_that_never_reports(s3: Any) -> None:
    from distkpi_job.upload import wait_for_manifests

    time = FakeTime()
    put_manifest(s3, 1)
    missing = wait_for_manifests(PREFIX, [1, 2], 10, clock=time.clock, sleep=time.sleep)
    assert missing == [2]
    assert sum(time.sleeps) == 10
