"""The collector acts on node and look manifests only: its EventBridge rule takes S3's Object
Created events of keys matching runs/*/node-*.json, so run.json, kpis.json, a decision, the
golden curve and a node's rendezvous record never invoke it, and what the wildcard still lets
through is told apart by its name before anything is read or wired, and counted."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from distkpi.entry import collector
from distkpi_cli.local.aws_stack import BUCKET, notification_pattern
from distkpi_cli.local.template import load_template, resources_of_type
from distkpi_cli.node.rendezvous import FOLDER, record_index, record_name

ROOT = Path(__file__).resolve().parents[2]

# what a paired seed-matrix run writes under runs/ besides its manifests
NOT_MANIFESTS = [
    "runs/r1/run.json",
    "runs/r1/kpis.json",
    "runs/r1/2x8-4ps/pair-1/decision.json",
    "runs/r1/2x8-4ps/golden.json",
    "runs/r1/2x8-4ps/logs/metrics.json",  # a .json file a command left
    "runs/r1/2x8-4ps/pair-1/a/logs/trainer.0.json",
    "runs/r1/diagnosis.json",
    f"runs/r1/2x8-4ps/{FOLDER}run-1/{record_name(3)}",
]
MANIFESTS = [
    "runs/r1/1x1/node-0.json",
    "runs/r1/4x8-8ps/node-11.json",
    "runs/r1/2x8-4ps/pair-3/node-1.json",
]


def test_the_rule_takes_s3_object_created_events_of_manifest_keys() -> None:
    template = load_template((ROOT / "template.yaml").read_text())
    function = resources_of_type(template, "AWS::Serverless::Function")["CollectorFunction"]
    (source,) = function["Events"].values()
    assert source["Type"] == "EventBridgeRule"
    assert source["Properties"]["Pattern"] == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created"],
        "detail": {
            "bucket": {"name": [{"Ref": "RunsBucket"}]},
            "object": {"key": [{"wildcard": "runs/*/node-*.json"}]},
        },
    }
    bucket = resources_of_type(template, "AWS::S3::Bucket")["RunsBucket"]
    assert bucket["NotificationConfiguration"] == {
        "EventBridgeConfiguration": {"EventBridgeEnabled": True}
    }


@mock_aws
def test_only_manifests_reach_the_collectors_queue_through_eventbridge() -> None:
    """The local stack's path: S3 -> EventBridge -> the template's rule -> SQS."""
    template = load_template((ROOT / "template.yaml").read_text())
    s3, sqs, events = (boto3.client(s, region_name="us-east-1") for s in ("s3", "sqs", "events"))
    s3.create_bucket(Bucket=BUCKET)
    s3.create_bucket(Bucket="another-bucket")
    queue = sqs.create_queue(QueueName="collector")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(Name="collector", EventPattern=json.dumps(notification_pattern(template)))
    events.put_targets(Rule="collector", Targets=[{"Id": "q", "Arn": arn["QueueArn"]}])
    for bucket in (BUCKET, "another-bucket"):
        s3.put_bucket_notification_configuration(
            Bucket=bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
        )
    for key in NOT_MANIFESTS + MANIFESTS:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}")
    s3.put_object(Bucket="another-bucket", Key=MANIFESTS[0], Body=b"{}")
    received = []
    while messages := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get(
        "Messages", []
    ):
        for message in messages:
            received.append(json.loads(message["Body"])["detail"]["object"]["key"])
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    assert sorted(received) == sorted(MANIFESTS)


def test_a_rendezvous_record_is_named_outside_the_notifications_suffix() -> None:
    key = f"runs/r1/2x8-4ps/{FOLDER}run-2/{record_name(3)}"
    assert key == "runs/r1/2x8-4ps/rendezvous/run-2/node-3.endpoint"
    assert not key.endswith(".json")
    assert record_index(record_name(3)) == 3
    assert record_index("node-03.endpoint") is None
    assert record_index("node-3.json") is None


def test_every_other_key_is_ignored_before_anything_is_read_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[str] = []

    def never_wired() -> None:
        raise AssertionError("the collector was wired for a key it does not act on")

    monkeypatch.setattr(collector, "fanin", never_wired)
    monkeypatch.setattr(collector, "count", lambda name, value=1: counted.append(name))
    assert collector.handle_keys(NOT_MANIFESTS) == 0
    assert counted == ["ObjectsNotManifests"] * len(NOT_MANIFESTS)
