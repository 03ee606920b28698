"""A config's item must fit DynamoDB's 400 KB whatever its nodes wrote, and a config left
without KPIs fails its run: it never passes by being absent."""

from __future__ import annotations

import json

import pytest

from distkpi.domain.kpis.engine import MAX_STORED_PROBLEMS
from distkpi.domain.signing import sign
from distkpi.entry import wiring
from tests.integration.conftest import BUCKET, Stack
from tests.integration.test_flow import (
    config_key_of,
    deliver_all,
    final_statuses,
    run_all_nodes,
    sweep,
)
from tests.integration.test_reliability import config_item


def manifest_naming_absent_files(stack: Stack, run_id: str, node: int) -> str:
    """A node (of the pull request's own code) whose signed manifest names 256 files of
    about 1 KB paths that it never uploaded: 256 problems of about 1 KB each."""
    role = "trainer" if node < 4 else "pserver"
    rank = node if role == "trainer" else node - 4
    folder = "/".join(f"{node:02d}" + "d" * 200 for _ in range(4))
    files = [
        {"path": f"{folder}/{i:03d}.log", "role": role, "rank": rank, "kind": "log"}
        for i in range(256)
    ]
    manifest = {
        "schema": 1,
        "run_id": run_id,
        "config": "4x8-8ps",
        "node": node,
        "exit_code": 0,
        "started_at": "2026-11-30T03:00:00Z",
        "finished_at": "2026-11-30T03:10:00Z",
        "files": files,
    }
    signed = sign(config_key_of(stack, run_id, "4x8-8ps"), manifest)
    key = f"runs/{run_id}/4x8-8ps/node-{node}.json"
    stack.job_s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(signed))
    return key


def test_a_config_with_thousands_of_problems_settles_failed_with_them_bounded(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = [k for k in run_all_nodes(stack, run_id) if "/4x8-8ps/" not in k]
    keys += [manifest_naming_absent_files(stack, run_id, node) for node in range(12)]
    deliver_all(stack, keys, copies=1)
    config = config_item(stack, run_id, "4x8-8ps")
    assert config["state"] == "failed"
    problems = config["kpis"]["problems"]
    assert len(problems) == MAX_STORED_PROBLEMS
    assert problems[-1].startswith("... and ") and problems[-1].endswith(" more")
    assert all(len(p) <= 400 for p in problems)
    (final,) = final_statuses(stack)
    assert final["state"] == "error" and final["description"].startswith("4x8-8ps failed")


def test_a_config_without_kpis_at_the_deadline_fails_the_run(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever left a config without KPIs (a write DynamoDB refused, an item lost), the
    evaluation counts it as failed: the run used to finish success without it."""
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, [k for k in run_all_nodes(stack, run_id) if "/4x8-8ps/" not in k])
    stack.table.update_item(
        Key={"PK": f"RUN#{run_id}", "SK": "CONFIG#4x8-8ps"},
        UpdateExpression="SET #state = :failed",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":failed": "failed"},
    )
    monkeypatch.setenv("RUN_TIMEOUT_S", "0")
    monkeypatch.setenv("QUEUE_WAIT_S", "0")  # its jobs never started (no RUNNING event)
    wiring.reset()
    sweep(stack)
    (final,) = final_statuses(stack)
    assert final["state"] == "error", final
    assert final["description"] == (
        "4x8-8ps failed: no KPIs were stored for this config: counted as failed"
    )
