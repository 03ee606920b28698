"""A delivery is queued once, started once, and never lost. The webhook claims it, records its
body and queues it, and answers at once, submitting nothing; the launcher behind the queue
claims it again while it starts its runs, for as long as its invocation may run. A launcher
that died midway leaves the message to SQS, whose next delivery of it (after the visibility
timeout) takes the expired claim over and submits only what the dead one never did; a
delivery the launcher keeps failing on ends in the dead-letter queue, from which a redrive
starts it."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from boto3.dynamodb.conditions import Key

from distkpi.adapters.batch import BatchLauncher
from distkpi.adapters.dynamo import DynamoTable, RunRepository
from distkpi.domain.github.deliveries import MAX_INLINE_BODY_BYTES
from distkpi.domain.layout import delivery_key
from distkpi_cli.local.aws_stack import ACCOUNT, REGION
from distkpi_cli.local.handlers import LambdaContext
from tests.integration.conftest import BUCKET, TABLE, Stack, event

DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
# infra/suites/resnet50.yaml, the suite the integration stack serves: four configs
CONFIGS = 4


class Killed(BaseException):
    """Lambda ending an invocation at its timeout: no Python handler runs after it."""


def claims(stack: Stack) -> dict[str, dict[str, Any]]:
    """The delivery claims by what they cover: the webhook's queuing, the launcher's start."""
    items = stack.table.query(KeyConditionExpression=Key("PK").eq("DELIVERY"))["Items"]
    return {_covering(item): item for item in items}


def _covering(claim: dict[str, Any]) -> str:
    """The webhook's claim answers the message it queued; the launcher's, its runs."""
    return "queued" if '"event"' in str(claim.get("answer", "")) else "started"


def wait_past(epoch_ms: int) -> None:
    while time.time() * 1000 <= epoch_ms:
        time.sleep(0.005)


def in_queue(stack: Stack, url: str) -> int:
    attributes = stack.sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def visibility_timeout_passes(url: str) -> None:
    """What SQS does once a message's visibility timeout is over: it may be received again."""
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[ACCOUNT][REGION].get_queue(url.rsplit("/", 1)[-1])
    for message in list(queue.pending_messages):
        message.change_visibility(0)
        queue.pending_messages.remove(message)


def given_until_dead(stack: Stack) -> None:
    """SQS gives what fails again once its visibility timeout is over, until the redrive
    policy's maxReceiveCount (5, template.yaml) is spent; the next receive moves it to the
    dead-letter queue."""
    for _ in range(6):
        visibility_timeout_passes(stack.queues.deliveries)  # type: ignore[union-attr]
        assert stack.launch() == []


def killed_after_first_job(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, left_ms: int
) -> dict[str, Any]:
    """Deliver; the launcher's invocation, with ``left_ms`` left when it claims, is killed
    just after Batch accepted its first job. The claim it leaves."""
    submit = BatchLauncher.submit

    def first_then_killed(self: BatchLauncher, plan: Any) -> Any:
        if self.submitted >= 1:
            raise Killed
        return submit(self, plan)

    with monkeypatch.context() as patched:
        patched.setattr(BatchLauncher, "submit", first_then_killed)
        with pytest.raises(Killed):
            stack.webhook(
                "pull_request",
                delivery=DELIVERY,
                context=LambdaContext(remaining_ms=lambda: left_ms),
            )
    assert len(stack.jobs()) == 1
    started = claims(stack)["started"]
    assert started["claim_status"] == "INPROGRESS"
    return started


def test_the_webhook_queues_the_delivery_and_answers_without_submitting_a_job(
    stack: Stack,
) -> None:
    answered = stack.webhook("pull_request", delivery=DELIVERY, drain=False)
    assert answered["statusCode"] == 202
    assert answered["json"] == {"message": "delivery queued", "delivery": DELIVERY}
    assert stack.jobs() == []
    assert stack.github.requests == 0  # no status posted, nothing asked of GitHub
    assert "Contents" not in stack.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/")
    # the body travels in the message: nothing kept in the bucket for it
    assert "Contents" not in stack.s3.list_objects_v2(Bucket=BUCKET, Prefix="deliveries/")
    (message,) = stack.sqs.receive_message(
        QueueUrl=stack.queues.deliveries,  # type: ignore[union-attr]
        VisibilityTimeout=0,
    )["Messages"]
    queued = json.loads(message["Body"])
    assert sorted(queued) == ["body", "delivery", "event"]
    assert json.loads(queued["body"]) == event("pull_request")["payload"]
    assert in_queue(stack, stack.queues.deliveries) == 1  # type: ignore[union-attr]
    claim = claims(stack)["queued"]
    assert claim["claim_status"] == "COMPLETED"
    assert "body" not in json.loads(claim["answer"])["answer"]  # not kept twice


def test_a_body_too_big_for_a_message_is_kept_in_the_bucket_and_started_from_there(
    stack: Stack,
) -> None:
    """A pull request's description may be long (GitHub caps it at 65,536 characters; its
    commits' messages and labels add to it): past the inline limit, the body is kept in
    the bucket and the message names it."""
    payload = copy.deepcopy(event("pull_request")["payload"])
    payload["pull_request"]["body"] = "\u00e9 " * (MAX_INLINE_BODY_BYTES // 4)
    answered = stack.webhook("pull_request", payload=payload, delivery=DELIVERY, drain=False)
    assert answered["statusCode"] == 202
    kept = stack.s3.get_object(Bucket=BUCKET, Key=delivery_key(DELIVERY))["Body"].read()
    assert json.loads(kept) == payload
    (started,) = stack.launch()
    assert started["status"] == 201 and len(stack.jobs()) == CONFIGS


def test_githubs_redelivery_of_a_queued_delivery_queues_nothing(stack: Stack) -> None:
    stack.webhook("pull_request", delivery=DELIVERY, drain=False)
    again = stack.webhook("pull_request", delivery=DELIVERY, drain=False)
    assert again["statusCode"] == 200
    assert again["json"] == {"message": "duplicate delivery", "runs": []}
    assert in_queue(stack, stack.queues.deliveries) == 1  # type: ignore[union-attr]


def test_a_launcher_killed_midway_is_given_the_delivery_again_and_starts_each_run_once(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    claim = killed_after_first_job(stack, monkeypatch, left_ms=10)
    assert stack.launch() == []  # the message is still invisible: nobody takes it over yet
    visibility_timeout_passes(stack.queues.deliveries)  # type: ignore[union-attr]
    wait_past(int(claim["in_progress_expiration"]))
    (started,) = stack.launch()
    assert started["status"] == 201 and len(started["answer"]["runs"]) == 1
    (run_id,) = started["answer"]["runs"]
    jobs = stack.jobs()
    names = sorted(j["jobName"] for j in jobs)
    # every config's job exactly once: the one the dead launcher submitted is not again
    assert len(jobs) == CONFIGS and len(set(names)) == CONFIGS
    configs = RunRepository(DynamoTable(TABLE, stack.table)).configs(run_id)
    assert sorted(c.job_id for c in configs) == sorted(j["jobId"] for j in jobs)
    assert claims(stack)["started"]["claim_status"] == "COMPLETED"
    assert in_queue(stack, stack.queues.deliveries) == 0  # type: ignore[union-attr]


def test_a_launcher_killed_between_submitjob_and_keeping_the_id_is_not_submitted_twice(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SubmitJob takes no idempotency key: Batch took the second job, the invocation died
    before the job's id was stored; the redelivery finds that job by its name and tags."""
    submit_paced = BatchLauncher._submit_paced

    def second_taken_then_killed(self: BatchLauncher, name: str, request: Any) -> Any:
        answer = submit_paced(self, name, request)
        if self.submitted == 2:
            raise Killed
        return answer

    with monkeypatch.context() as patched:
        patched.setattr(BatchLauncher, "_submit_paced", second_taken_then_killed)
        with pytest.raises(Killed):
            stack.webhook(
                "pull_request", delivery=DELIVERY, context=LambdaContext(remaining_ms=lambda: 10)
            )
    assert len(stack.jobs()) == 2
    visibility_timeout_passes(stack.queues.deliveries)  # type: ignore[union-attr]
    wait_past(int(claims(stack)["started"]["in_progress_expiration"]))
    (started,) = stack.launch()
    assert started["status"] == 201
    (run_id,) = started["answer"]["runs"]
    jobs = stack.jobs()
    assert sorted(j["jobName"] for j in jobs) == sorted({j["jobName"] for j in jobs})
    assert len(jobs) == CONFIGS
    configs = RunRepository(DynamoTable(TABLE, stack.table)).configs(run_id)
    assert sorted(c.job_id for c in configs) == sorted(j["jobId"] for j in jobs)


def test_a_message_given_while_the_claiming_launcher_may_still_run_goes_back_to_the_queue(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed_after_first_job(stack, monkeypatch, left_ms=600_000)
    visibility_timeout_passes(stack.queues.deliveries)  # type: ignore[union-attr]
    # SQS gave it again early (at least once): not started, not deleted either
    assert stack.launch() == []
    assert len(stack.jobs()) == 1
    assert in_queue(stack, stack.queues.deliveries) == 1  # type: ignore[union-attr]


def test_a_second_message_of_a_delivery_started_before_starts_nothing(stack: Stack) -> None:
    first = stack.webhook("pull_request", delivery=DELIVERY)
    assert first["statusCode"] == 201
    jobs = len(stack.jobs())
    body = json.dumps(event("pull_request")["payload"])  # what stack.webhook sent
    message = {"delivery": DELIVERY, "event": "pull_request", "body": body}
    stack.sqs.send_message(QueueUrl=stack.queues.deliveries, MessageBody=json.dumps(message))  # type: ignore[union-attr]
    (again,) = stack.launch()
    assert again["status"] == 200 and again["answer"]["message"] == "duplicate delivery"
    assert len(stack.jobs()) == jobs


def test_a_delivery_the_launcher_keeps_failing_on_ends_in_the_dead_letter_queue(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("DynamoDB throttled")

    stack.webhook("pull_request", delivery=DELIVERY, drain=False)
    with monkeypatch.context() as patched:
        patched.setattr("distkpi.services.delivery.DeliveryStarter.start_runs", refused)
        given_until_dead(stack)
    queues = stack.queues
    assert queues is not None
    assert in_queue(stack, queues.deliveries) == 0
    assert in_queue(stack, queues.dead_deliveries) == 1
    # each failed attempt released its claim at once: a redrive starts the delivery
    assert "started" not in claims(stack)
    (dead,) = stack.sqs.receive_message(QueueUrl=queues.dead_deliveries)["Messages"]
    stack.sqs.send_message(QueueUrl=queues.deliveries, MessageBody=dead["Body"])
    (started,) = stack.launch()
    assert started["status"] == 201 and len(stack.jobs()) == CONFIGS


def test_a_poison_message_ends_in_the_dead_letter_queue_and_holds_up_nothing(
    stack: Stack,
) -> None:
    queues = stack.queues
    assert queues is not None
    stack.sqs.send_message(QueueUrl=queues.deliveries, MessageBody='{"delivery": "x"}')
    first = stack.webhook("pull_request", delivery=DELIVERY)
    assert first["statusCode"] == 201
    given_until_dead(stack)
    assert in_queue(stack, queues.deliveries) == 0
    (dead,) = stack.sqs.receive_message(QueueUrl=queues.dead_deliveries)["Messages"]
    assert dead["Body"] == '{"delivery": "x"}'
