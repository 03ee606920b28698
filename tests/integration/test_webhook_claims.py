"""A delivery is done once, and never lost: the webhook's claim on a delivery id lasts as
long as the invocation that made it may run, so GitHub's redelivery of a delivery whose
function was killed (at its timeout) starts its runs; a true repeat gets the stored answer.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from boto3.dynamodb.conditions import Key

from distkpi.adapters.batch import BatchLauncher
from distkpi_cli.local.handlers import LambdaContext
from tests.integration.conftest import Stack

DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"


class Killed(BaseException):
    """Lambda ending an invocation at its timeout: no Python handler runs after it."""


def claims(stack: Stack) -> list[dict[str, Any]]:
    return stack.table.query(KeyConditionExpression=Key("PK").eq("DELIVERY"))["Items"]


def wait_past(epoch_ms: int) -> None:
    while time.time() * 1000 <= epoch_ms:
        time.sleep(0.005)


def killed_in(stack: Stack, monkeypatch: pytest.MonkeyPatch, left_ms: int) -> dict[str, Any]:
    """Deliver, the invocation having ``left_ms`` when it claims, and kill it as it submits
    its first job; the claim it leaves."""

    def killed(*args: object, **kwargs: object) -> None:
        raise Killed

    with monkeypatch.context() as patched:
        patched.setattr(BatchLauncher, "submit", killed)
        with pytest.raises(Killed):
            stack.webhook(
                "pull_request",
                delivery=DELIVERY,
                context=LambdaContext(remaining_ms=lambda: left_ms),
            )
    assert stack.jobs() == []
    (claim,) = claims(stack)
    assert claim["claim_status"] == "INPROGRESS"
    return claim


def test_a_redelivery_while_the_claiming_invocation_may_still_run_starts_nothing(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed_in(stack, monkeypatch, left_ms=600_000)
    again = stack.webhook("pull_request", delivery=DELIVERY)
    assert again["json"] == {"message": "duplicate delivery", "runs": []}
    assert stack.jobs() == []


def test_a_delivery_whose_invocation_was_killed_runs_when_github_redelivers(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    claim = killed_in(stack, monkeypatch, left_ms=10)
    wait_past(int(claim["in_progress_expiration"]))
    redelivered = stack.webhook("pull_request", delivery=DELIVERY)
    assert redelivered["statusCode"] == 201 and len(redelivered["json"]["runs"]) == 1
    assert len(stack.jobs()) > 0
    (claim,) = claims(stack)
    assert claim["claim_status"] == "COMPLETED"


def test_a_repeat_gets_the_stored_answer_and_starts_nothing(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    first = stack.webhook("pull_request", delivery=DELIVERY)
    jobs = len(stack.jobs())
    (claim,) = claims(stack)
    assert claim["claim_status"] == "COMPLETED" and first["json"]["runs"][0] in claim["answer"]
    again = stack.webhook("pull_request", delivery=DELIVERY)
    assert again["json"] == {"message": "duplicate delivery", "runs": []}
    assert len(stack.jobs()) == jobs
    seen = [r for r in caplog.records if r.getMessage() == "delivery seen before; nothing started"]
    assert [r.runs for r in seen] == [first["json"]["runs"]]  # type: ignore[attr-defined]


def test_a_claim_whose_work_raised_is_released_at_once(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("DynamoDB throttled")

    with monkeypatch.context() as patched:
        patched.setattr("distkpi.services.delivery.DeliveryStarter.start_runs", refused)
        with pytest.raises(RuntimeError):
            stack.webhook("pull_request", delivery=DELIVERY)
    assert claims(stack) == []
    assert stack.webhook("pull_request", delivery=DELIVERY)["statusCode"] == 201
