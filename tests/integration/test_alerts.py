"""Default-branch alerts: a regression on a push to a configured branch is told once to the
stack's topic, with the KPIs, the commits since the last pass and the report."""

from __future__ import annotations

import copy
import json
from typing import Any

import boto3

from distkpi_cli.local.aws_stack import REGRESSION_TOPIC
from tests.integration.conftest import Stack, event
from tests.integration.test_flow import deliver_all, run_all_nodes
from tests.integration.test_history import seed_history

REPO = "PaddlePaddle/Paddle"


def subscribed_queue() -> str:
    """An SQS queue subscribed to the regression topic, as a team's webhook would be."""
    sqs, sns = boto3.client("sqs"), boto3.client("sns")
    url = sqs.create_queue(QueueName="alerts")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    topic = next(
        t["TopicArn"] for t in sns.list_topics()["Topics"] if REGRESSION_TOPIC in t["TopicArn"]
    )
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn["QueueArn"])
    return url


def alerts(url: str) -> list[dict[str, Any]]:
    """The alerts published since the last call (each read once: deleted, so that one read
    before the queue's visibility timeout ran out is not read again later)."""
    sqs = boto3.client("sqs")
    found = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    for message in found:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return [json.loads(m["Body"]) for m in found]


def push(stack: Stack, sha: str, before: str, scale: float) -> str:
    payload = copy.deepcopy(event("push")["payload"])
    payload["after"], payload["before"] = sha, before
    response = stack.webhook("push", payload=payload, delivery=f"push-{sha[:6]}")
    (run_id,) = response["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id, scale={"4x8-8ps": scale}), copies=1)
    return run_id


def test_a_regression_is_alerted_once_until_it_passes_again(stack: Stack) -> None:
    seed_history(stack, 12)
    queue = subscribed_queue()
    good, bad1, bad2, fixed, bad3 = ("a" * 40, "b" * 40, "c" * 40, "d" * 40, "e" * 40)
    push(stack, good, "f" * 40, 1.0)
    assert alerts(queue) == []
    # two failing pushes in a row: one alert, for the first
    push(stack, bad1, good, 0.75)
    push(stack, bad2, bad1, 0.75)
    (alert,) = alerts(queue)
    assert alert["Subject"] == f"distkpi: resnet50 regressed on {REPO} develop"
    body = alert["Message"]
    assert "Newly regressed: 4x8-8ps" in body
    assert "- 4x8-8ps throughput: 1800 vs 2396, -24.9% (allowed 2275 to 2522)" in body
    # GitHub's host is the API's (here the stand-in's)
    assert f"{stack.github.url}/{REPO}/compare/{good}...{bad1}" in body
    assert "Report: https://distkpi.example.com/reports/" in body
    # it passes again, then regresses: a new alert
    push(stack, fixed, bad2, 1.0)
    push(stack, bad3, fixed, 0.75)
    (again,) = alerts(queue)
    assert f"/compare/{fixed}...{bad3}" in again["Message"]


def test_a_pull_requests_failure_alerts_no_one(stack: Stack) -> None:
    seed_history(stack, 12)
    queue = subscribed_queue()
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id, scale={"4x8-8ps": 0.75}), copies=1)
    assert alerts(queue) == []
