"""The local state folder: what it keeps, and what it refuses to load."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from distkpi_cli.local.state import StateError, StateFolder
from tests.conftest import offline_aws

TABLE, BUCKET = "state-table", "state-bucket"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    offline_aws(monkeypatch)
    with mock_aws():
        client = boto3.client
        client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client("s3").create_bucket(Bucket=BUCKET)
        yield client


def fill(client: Any) -> None:
    client("dynamodb").put_item(
        TableName=TABLE,
        Item={"PK": {"S": "RUN#1"}, "n": {"N": "1.5"}, "blob": {"B": b"\x00\xff"}},
    )
    s3 = client("s3")
    s3.put_object(Bucket=BUCKET, Key="reports/1/index.html", Body=b"<p>", ContentType="text/html")
    s3.put_object(Bucket=BUCKET, Key="runs/1/c/node-0.json", Body=b"{}")
    s3.put_object(Bucket=BUCKET, Key="suites/local.yaml", Body=b"name: x")


def empty(client: Any) -> None:
    client("dynamodb").delete_item(TableName=TABLE, Key={"PK": {"S": "RUN#1"}})
    for key in ("reports/1/index.html", "runs/1/c/node-0.json", "suites/local.yaml"):
        client("s3").delete_object(Bucket=BUCKET, Key=key)


def test_items_and_objects_survive_a_save_and_a_load(aws: Any, tmp_path: Path) -> None:
    state = StateFolder(tmp_path / "state")
    fill(aws)
    assert state.save(aws, TABLE, BUCKET) == (1, 2)  # the suite is each stack's own
    empty(aws)
    assert state.load(aws, TABLE, BUCKET) == (1, 2)
    item = aws("dynamodb").get_item(TableName=TABLE, Key={"PK": {"S": "RUN#1"}})["Item"]
    assert item["blob"]["B"] == b"\x00\xff" and item["n"]["N"] == "1.5"
    got = aws("s3").get_object(Bucket=BUCKET, Key="reports/1/index.html")
    assert got["Body"].read() == b"<p>" and got["ContentType"] == "text/html"
    assert not (tmp_path / "state.new").exists() and not (tmp_path / "state.old").exists()


def test_no_folder_is_empty_state(aws: Any, tmp_path: Path) -> None:
    assert StateFolder(tmp_path / "none").load(aws, TABLE, BUCKET) == (0, 0)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda p: (p / "state.json").write_text("{"), "state.json cannot be read"),
        (lambda p: (p / "state.json").write_text(json.dumps({"format": 99})), "format 99"),
        (lambda p: (p / "table.jsonl").write_text("not json\n"), "contents cannot be read"),
        (lambda p: (p / "objects" / "0").unlink(), "contents cannot be read"),
        (lambda p: p.with_name("state.new").mkdir(), "stopped while saving"),
    ],
)
def test_a_damaged_or_foreign_state_is_an_error_naming_it_and_fresh(
    aws: Any, tmp_path: Path, damage: Any, why: str
) -> None:
    state = StateFolder(tmp_path / "state")
    fill(aws)
    state.save(aws, TABLE, BUCKET)
    damage(state.path)
    with pytest.raises(StateError) as err:
        state.load(aws, TABLE, BUCKET)
    assert str(err.value).startswith(f"state folder {state.path}: ")
    assert why in str(err.value) and "--fresh" in str(err.value)
    assert state.path.exists()  # never silently reset
    state.fresh()
    assert state.load(aws, TABLE, BUCKET) == (0, 0)


def test_a_second_holder_is_refused(tmp_path: Path) -> None:
    state = StateFolder(tmp_path / "state")
    second = StateFolder(tmp_path / "state")
    with (
        state.locked(),
        pytest.raises(StateError, match="is in use by distkpi pid"),
        second.locked(),
    ):
        pass
    with state.locked():  # released
        pass
