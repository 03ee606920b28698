"""A run's deadline on AWS's shapes: Batch's RUNNING event (EventBridge) to job_events moves
the run from the queue-wait range of the sparse index to the run-timeout one, once; the
sweeper hands what is overdue to the overdue-run queue and the deadlines function settles it
with the reason that says which bound it passed."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from distkpi.entry import wiring
from distkpi_cli.local.handlers import LambdaContext, batch_job_event
from tests.integration.conftest import Stack
from tests.integration.test_flow import final_statuses


def run_item(stack: Stack, run_id: str) -> dict[str, object]:
    return stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]  # type: ignore[no-any-return]


def running(stack: Stack, job_id: str, started_ms: int) -> None:
    event = batch_job_event(job_id, "distkpi-job", stack.queue, "RUNNING", "")
    event["detail"]["startedAt"] = started_ms
    stack.handlers["job_events"].lambda_handler(event, LambdaContext())


def test_the_first_jobs_running_starts_the_run_timeout_once(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    queued = run_item(stack, run_id)
    assert "started_at" not in queued and not str(queued["GSI2SK"]).startswith("started#")
    first, second, *_ = (j["jobId"] for j in stack.jobs())
    now_ms = int(time.time() * 1000)
    running(stack, first, now_ms)
    running(stack, second, now_ms + 60_000)  # a later job's start moves nothing
    started = run_item(stack, run_id)
    at = datetime.fromtimestamp(now_ms / 1000, UTC).isoformat(timespec="milliseconds")
    assert started["started_at"] == at
    assert str(started["GSI2SK"]).startswith(f"started#{at}#")
    # the queue wait no longer counts for it: only the run timeout does
    monkeypatch.setenv("QUEUE_WAIT_S", "0")
    wiring.reset()
    assert stack.sweep()["timed_out"] == 0
    monkeypatch.setenv("RUN_TIMEOUT_S", "0")
    wiring.reset()
    assert stack.sweep()["timed_out"] == 1
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert "timed out: no result 0h after its first job started (" in final["description"]
