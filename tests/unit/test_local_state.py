"""The local state folder: what it keeps, and what it refuses to load."""

from __future__ import annotations

import json
import shutil
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


def entries(state: StateFolder) -> list[dict[str, Any]]:
    lines = (state.path / "objects.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def rewrite(state: StateFolder, listed: list[dict[str, Any]]) -> None:
    (state.path / "objects.jsonl").write_text("".join(json.dumps(e) + "\n" for e in listed))


def hostile_suite(state: StateFolder) -> None:
    """A suite in the folder would be a command the next stack runs."""
    (state.path / "objects" / "9").write_text("name: evil\ncommand: [sh, -c, id]\n")
    rewrite(state, [*entries(state), {"key": "suites/evil.yaml", "file": "9", "content_type": ""}])


def file_named(name: str) -> Any:
    def damage(state: StateFolder) -> None:
        listed = entries(state)
        listed[0]["file"] = name
        rewrite(state, listed)

    return damage


def symlinked(state: StateFolder) -> None:
    target = state.path / "objects" / "0"
    target.unlink()
    target.symlink_to("/etc/hostname")


def symlinked_folder(state: StateFolder) -> None:
    shutil.move(state.path / "objects", state.path / "elsewhere")
    (state.path / "objects").symlink_to(state.path / "elsewhere")


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (hostile_suite, "entry 3 ('suites/evil.yaml') is outside runs/, reports/, site/"),
        (file_named("../../../../etc/hostname"), "names the file '../../../../etc/hostname'"),
        (file_named("/etc/passwd"), "names the file '/etc/passwd', not a number inside objects/"),
        (file_named("0/../1"), "not a number inside objects/"),
        (file_named("１"), "not a number inside objects/"),  # a digit, but not an ASCII one
        (file_named(7), "names the file 7"),  # type: ignore[arg-type]
        (symlinked, "entry 1 ('reports/1/index.html'): objects/0 is a symlink"),
        (symlinked_folder, "objects/0 is a symlink"),
    ],
)
def test_a_state_folder_loads_results_only_never_code_or_other_files(
    aws: Any, tmp_path: Path, damage: Any, why: str
) -> None:
    state = StateFolder(tmp_path / "state")
    fill(aws)
    state.save(aws, TABLE, BUCKET)
    empty(aws)
    damage(state)
    with pytest.raises(StateError) as err:
        state.load(aws, TABLE, BUCKET)
    assert why in str(err.value) and "--fresh" in str(err.value)
    # nothing of it was loaded: no item, no object
    assert aws("dynamodb").scan(TableName=TABLE)["Items"] == []
    assert aws("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_a_save_keeps_only_what_a_load_takes(aws: Any, tmp_path: Path) -> None:
    fill(aws)
    aws("s3").put_object(Bucket=BUCKET, Key="site/index.html", Body=b"<p>")
    aws("s3").put_object(Bucket=BUCKET, Key="elsewhere/x", Body=b"x")
    state = StateFolder(tmp_path / "state")
    state.save(aws, TABLE, BUCKET)
    assert sorted(e["key"] for e in entries(state)) == [
        "reports/1/index.html",
        "runs/1/c/node-0.json",
        "site/index.html",
    ]
