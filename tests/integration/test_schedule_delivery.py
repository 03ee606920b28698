"""The stack's schedule, as EventBridge sends it (template.yaml, NightlySchedule: its message
on the delivery queue), through the real launcher handler: each listed repository's default
branch head, asked of GitHub with conditional requests, measured by the configs on
`schedule` (and the base) once per head; GitHub down leaves the message for SQS to give
again."""

from __future__ import annotations

import json

from distkpi.adapters.dynamo import DynamoTable, RunRepository
from distkpi.domain.github.deliveries import SCHEDULE_MESSAGE
from distkpi_cli.local.aws_stack import LOCAL_REPOSITORIES
from tests.fakes import seed_suite_with_when
from tests.integration.conftest import BUCKET, SUITES, TABLE, Stack

HEAD = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
NIGHTLY = {"1x8": "[pull_request, push]", "2x8-4ps": "[push]", "4x8-8ps": "[schedule]"}


def nightly_suite(stack: Stack) -> None:
    """The seed's suite with its biggest config on the schedule only."""
    (seed,) = SUITES
    body = seed_suite_with_when(NIGHTLY).encode()
    stack.s3.put_object(Bucket=BUCKET, Key=f"suites/{seed.name}", Body=body)


def schedule(stack: Stack) -> list[dict[str, object]]:
    stack.sqs.send_message(
        QueueUrl=stack.queues.deliveries,  # type: ignore[union-attr]
        MessageBody=json.dumps(SCHEDULE_MESSAGE),
    )
    return stack.launch()


def test_a_schedule_runs_each_repositorys_head_once_with_its_scheduled_configs(
    stack: Stack,
) -> None:
    nightly_suite(stack)
    stack.github.heads = {"develop": HEAD}
    (answer,) = schedule(stack)
    assert answer["delivery"] == "schedule" and answer["status"] == 201
    started = answer["answer"]["repositories"]  # type: ignore[index]
    assert sorted(started) == sorted(LOCAL_REPOSITORIES.split(","))
    runs = RunRepository(DynamoTable(TABLE, stack.table))
    for repo, (run_id,) in started.items():
        run = runs.get(run_id)
        assert run is not None
        assert (run.trigger.repo, run.trigger.event, run.trigger.sha) == (repo, "schedule", HEAD)
        assert [c.name for c in run.spec.configs] == ["1x1", "4x8-8ps"]
    assert len(stack.jobs()) == 4
    # the next night, the same head: GitHub answers 304s, nothing starts again
    not_modified = stack.github.kinds["not_modified"]
    (again,) = schedule(stack)
    assert again["answer"]["runs"] == []  # type: ignore[index]
    assert stack.github.kinds["not_modified"] == not_modified + 4
    assert len(stack.jobs()) == 4


def test_github_down_gives_the_schedule_back_to_the_queue(stack: Stack) -> None:
    nightly_suite(stack)
    stack.github.heads = {"develop": HEAD}
    stack.github.fail_next(*[503] * 40)
    assert schedule(stack) == []  # failed: reported to SQS as the batch's failure
    assert stack.jobs() == []
    attributes = stack.sqs.get_queue_attributes(
        QueueUrl=stack.queues.deliveries,  # type: ignore[union-attr]
        AttributeNames=["ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "1"
