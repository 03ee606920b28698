"""Regression tests of the reliability findings, through the real handlers: every config is
settled whatever its files hold, and only node-<i>.json with a canonical i < nodes counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.exceptions import StorageError
from tests.integration.conftest import BUCKET, Stack
from tests.integration.test_flow import (
    deliver_all,
    final_statuses,
    jobs_by_config,
    run_all_nodes,
    sweep,
    trainer_log,
    upload_node,
)


def config_item(stack: Stack, run_id: str, config: str) -> dict[str, Any]:
    key = {"PK": f"RUN#{run_id}", "SK": f"CONFIG#{config}"}
    return stack.table.get_item(Key=key)["Item"]  # type: ignore[no-any-return]


def copy_object(stack: Stack, source: str, target: str) -> None:
    body = stack.s3.get_object(Bucket=BUCKET, Key=source)["Body"].read()
    stack.s3.put_object(Bucket=BUCKET, Key=target, Body=body)


def test_a_node_01_copy_beside_node_1_does_not_count_trainer_1_twice(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    copy = f"runs/{run_id}/2x8-4ps/node-01.json"
    copy_object(stack, f"runs/{run_id}/2x8-4ps/node-1.json", copy)
    deliver_all(stack, [copy, *keys], copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "success"
    kpis = json.loads(
        stack.s3.get_object(Bucket=BUCKET, Key=f"runs/{run_id}/kpis.json")["Body"].read()
    )
    assert kpis["configs"]["2x8-4ps"]["throughput"] == pytest.approx(1300.0)
    assert stack.collect(copy) == {"handled": 0}


def test_a_node_beyond_the_config_settles_nothing_and_the_real_node_still_counts(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    last = f"runs/{run_id}/4x8-8ps/node-11.json"
    stray = upload_node(stack, run_id, "4x8-8ps", 99, "trainer", 99, trainer_log(1.0))
    assert stack.collect(stray) == {"handled": 0}
    deliver_all(stack, [k for k in keys if k != last], copies=1)
    assert config_item(stack, run_id, "4x8-8ps")["state"] == "pending"
    assert final_statuses(stack) == []
    assert stack.collect(last) == {"handled": 1}
    assert config_item(stack, run_id, "4x8-8ps")["state"] == "ok"
    (final,) = final_statuses(stack)
    assert final["state"] == "success"


def test_a_node_index_of_fifty_digits_is_ignored_not_retried(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    key = f"runs/{run_id}/1x1/node-{'9' * 50}.json"
    stack.s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}")
    assert stack.collect(key) == {"handled": 0}


def test_a_log_the_parser_crashes_on_still_settles_the_run(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(stream: object, settings: object = None) -> object:
        raise IndexError("a parser bug")

    monkeypatch.setattr("distkpi.domain.logs.filesummary.parse_log", crash)
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    problems = config_item(stack, run_id, "1x1")["kpis"]["problems"]
    assert "logs/trainer-0.log: cannot be parsed: IndexError" in problems


def test_a_file_s3_answers_with_403_settles_its_config_on_the_failed_job_event(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    # an older image's nodes: no summaries, so the collector reads the logs from S3
    keys = run_all_nodes(stack, run_id, summaries=False)
    denied = f"runs/{run_id}/1x8/logs/trainer-0.log"
    opened = S3RunStore.open

    def forbidden(self: S3RunStore, key: str) -> Any:
        if key == denied:
            raise StorageError(f"cannot read s3://{BUCKET}/{key}: AccessDenied (403)")
        return opened(self, key)

    monkeypatch.setattr(S3RunStore, "open", forbidden)
    deliver_all(stack, keys, copies=1)
    assert config_item(stack, run_id, "1x8")["state"] == "failed"
    assert stack.job_failed(jobs_by_config(stack, run_id)["1x8"], "Essential container exited")
    (final,) = final_statuses(stack)
    assert final["state"] == "error"


def test_a_run_folder_that_cannot_be_listed_is_settled_by_the_sweeper(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    (broken,) = stack.webhook("pull_request")["json"]["runs"]
    (fine,) = stack.webhook("push")["json"]["runs"]

    def denied(self: S3RunStore, prefix: str) -> list[str]:
        if broken in prefix:
            raise StorageError(f"cannot list s3://{BUCKET}/{prefix}: AccessDenied")
        return []

    monkeypatch.setattr(S3RunStore, "list_names", denied)
    monkeypatch.setenv("RUN_TIMEOUT_S", "0")
    monkeypatch.setenv("QUEUE_WAIT_S", "0")  # their jobs never started (no RUNNING event)
    from distkpi.entry import wiring

    wiring.reset()
    assert sweep(stack) == {"timed_out": 2, "republished": 0}
    assert {s["state"] for s in final_statuses(stack)} == {"error"}
    assert len(final_statuses(stack)) == 2
    problems = config_item(stack, broken, "1x1")["kpis"]["problems"]
    assert any(p.startswith("run folder cannot be read") for p in problems)
    assert stack.table.get_item(Key={"PK": f"RUN#{fine}", "SK": "RUN"})["Item"]["status"] == "done"


def test_one_run_that_cannot_be_republished_does_not_keep_the_others_back(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given two runs that finished while GitHub was down
    (broken,) = stack.webhook("pull_request")["json"]["runs"]
    (fine,) = stack.webhook("push")["json"]["runs"]
    stack.github.stop()
    deliver_all(stack, run_all_nodes(stack, broken) + run_all_nodes(stack, fine), copies=1)
    # and one whose stored result no longer reads
    stack.table.update_item(
        Key={"PK": f"RUN#{broken}", "SK": "RUN"},
        UpdateExpression="SET #result.kpis = :garbage",
        ExpressionAttributeNames={"#result": "result"},
        ExpressionAttributeValues={":garbage": {"configs": "not a mapping"}},
    )
    # When GitHub is back and the sweeper runs
    stack.github.start()
    monkeypatch.setenv("GITHUB_API_URL", stack.github.url)
    from distkpi.entry import wiring

    wiring.reset()
    # Then the other run's status goes out, and the broken one is logged
    assert sweep(stack) == {"timed_out": 0, "republished": 1}
    (final,) = final_statuses(stack)
    assert final["description"].startswith("32 GPUs")
    assert "status not republished" in caplog.text
