"""AWS on 127.0.0.1: moto's server, with the table, bucket, secrets and Batch resources made
from the same definitions as template.yaml, and S3's events going through EventBridge, under
the collector's rule, to an SQS queue."""

from __future__ import annotations

import functools
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import requests

from distkpi_cli.local.moto_front import StackKeys
from distkpi_cli.local.template import (
    bucket_settings,
    load_template,
    resources_of_type,
    table_definition,
    ttl_attribute,
)

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
STACK_NAME = "distkpi"
TABLE = "distkpi-local"
# named as template.yaml names it, so that the S3 ARNs of its IAM policies match this bucket
BUCKET = f"{STACK_NAME}-runs-{ACCOUNT}-{REGION}"
QUEUE = "distkpi-local-node-manifests"
DELIVERY_QUEUE = "distkpi-local-deliveries"
DELIVERY_DLQ = "distkpi-local-deliveries-dead"
OVERDUE_QUEUE = "distkpi-local-overdue-runs"
WEBHOOK_SECRET_ID = "distkpi-local-webhook"
# what the local stack lets start runs: the demo's repository, and the one the recorded
# deliveries in tests/events come from
LOCAL_REPOSITORIES = "local/demo,PaddlePaddle/Paddle"
GITHUB_TOKEN_SECRET_ID = "distkpi-local-github-token"
GITHUB_APP_SECRET_ID = "distkpi-local-github-app"
REPORT_LINK_SECRET_ID = "distkpi-local-report-links"
MANIFEST_SECRET_ID = "distkpi-local-manifest-master"
REGRESSION_TOPIC = "distkpi-local-regressions"
CHAT_WEBHOOK_SECRET_ID = "distkpi-local-chat-webhook"


@dataclass(frozen=True)
class LocalAws:
    endpoint: str
    queue_url: str
    queues: WorkQueues
    webhook_secret: str
    github_token: str
    job_queue: str
    single_node_definition: str
    multi_node_definition: str
    regression_topic: str
    github_app: bool = False
    # the stack's own IAM user's: moto answers no other key once the stack is up
    access_key_id: str = "local"
    secret_access_key: str = "local"

    def __post_init__(self) -> None:
        if isinstance(self.queues, dict):  # read back from a running stack's JSON
            object.__setattr__(self, "queues", WorkQueues(**self.queues))

    def client(self, service: str) -> Any:
        return boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
        )

    def environment(self) -> dict[str, str]:
        return aws_environment(self.endpoint, self.access_key_id, self.secret_access_key)


def local_client(endpoint: str, service: str) -> Any:
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION)  # type: ignore[call-overload]


def aws_environment(
    endpoint: str, access_key_id: str = "local", secret_access_key: str = "local"
) -> dict[str, str]:
    """What every process of the local stack needs to talk to it (and to nothing else)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": access_key_id,
        "AWS_SECRET_ACCESS_KEY": secret_access_key,
    }


def notification_pattern(template: dict[str, Any]) -> dict[str, Any]:
    """The collector's EventBridge pattern, as written in the template, on this stack's
    bucket."""
    collector = resources_of_type(template, "AWS::Serverless::Function")["CollectorFunction"]
    pattern = collector["Events"]["NodeManifest"]["Properties"]["Pattern"]

    def on_bucket(node: Any) -> Any:
        if node == {"Ref": "RunsBucket"}:
            return BUCKET
        if isinstance(node, dict):
            return {k: on_bucket(v) for k, v in node.items()}
        if isinstance(node, list):
            return [on_bucket(v) for v in node]
        return node

    return dict(on_bucket(pattern))


def _job_command(template: dict[str, Any], logical_id: str) -> list[str]:
    props = resources_of_type(template, "AWS::Batch::JobDefinition")[logical_id]
    if props["Type"] == "container":
        return list(props["ContainerProperties"]["Command"])
    return list(props["NodeProperties"]["NodeRangeProperties"][0]["Container"]["Command"])


def _batch(aws: Any, iam: Any, template: dict[str, Any]) -> tuple[str, str, str]:
    role = iam.create_role(RoleName="distkpi-local-batch", AssumeRolePolicyDocument="{}")
    env = aws.create_compute_environment(
        computeEnvironmentName="distkpi-local",
        type="UNMANAGED",
        state="ENABLED",
        serviceRole=role["Role"]["Arn"],
    )["computeEnvironmentArn"]
    queue = aws.create_job_queue(
        jobQueueName="distkpi-local",
        state="ENABLED",
        priority=1,
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": env}],
    )["jobQueueArn"]
    resources = [{"type": "VCPU", "value": "1"}, {"type": "MEMORY", "value": "1024"}]
    single = aws.register_job_definition(
        jobDefinitionName="distkpi-local-single",
        type="container",
        containerProperties={
            "image": "distkpi-job:local",
            "resourceRequirements": resources,
            "command": _job_command(template, "SingleNodeJobDefinition"),
        },
    )["jobDefinitionArn"]
    container = {
        "image": "distkpi-job:local",
        "resourceRequirements": resources,
        "command": _job_command(template, "MultiNodeJobDefinition"),
    }
    multi = aws.register_job_definition(
        jobDefinitionName="distkpi-local-multinode",
        type="multinode",
        nodeProperties={
            "numNodes": 2,
            "mainNode": 0,
            "nodeRangeProperties": [{"targetNodes": "0:", "container": container}],
        },
    )["jobDefinitionArn"]
    return queue, single, multi


@dataclass(frozen=True)
class WorkQueues:
    """The template's SQS queues between functions (moto runs no event source mapping: the
    local stack and the tests drain them into the handlers)."""

    deliveries: str
    dead_deliveries: str
    overdue_runs: str

    def all(self) -> tuple[str, ...]:
        return (self.deliveries, self.dead_deliveries, self.overdue_runs)


@dataclass(frozen=True)
class Provisioned:
    job_queue: str
    single_node_definition: str
    multi_node_definition: str
    regression_topic: str
    github_app: bool = False
    queues: WorkQueues | None = None


def provision(
    client: Callable[[str], Any],
    template: dict[str, Any],
    suites: list[Path],
    *,
    webhook_secret: str,
    github_token: str,
    github_app: str | None = None,
) -> Provisioned:
    """The table, bucket, secrets and Batch resources of template.yaml, in whatever AWS
    ``client`` reaches (moto in-process for tests, moto's server for the local stack)."""
    dynamodb = client("dynamodb")
    dynamodb.create_table(**table_definition(template, "RunsTable", TABLE))
    dynamodb.update_time_to_live(
        TableName=TABLE,
        TimeToLiveSpecification={
            "Enabled": True,
            "AttributeName": ttl_attribute(template, "RunsTable"),
        },
    )
    s3 = client("s3")
    s3.create_bucket(Bucket=BUCKET)
    settings = bucket_settings(template, "RunsBucket")
    s3.put_bucket_encryption(
        Bucket=BUCKET, ServerSideEncryptionConfiguration=settings["encryption"]
    )
    s3.put_public_access_block(
        Bucket=BUCKET, PublicAccessBlockConfiguration=settings["public_access_block"]
    )
    for suite in suites:
        s3.put_object(Bucket=BUCKET, Key=f"suites/{suite.name}", Body=suite.read_bytes())
    sm = client("secretsmanager")
    sm.create_secret(Name=WEBHOOK_SECRET_ID, SecretString=webhook_secret)
    sm.create_secret(Name=GITHUB_TOKEN_SECRET_ID, SecretString=github_token)
    sm.create_secret(Name=GITHUB_APP_SECRET_ID, SecretString=github_app or "replace-me")
    sm.create_secret(Name=REPORT_LINK_SECRET_ID, SecretString=secrets.token_hex(20))
    sm.create_secret(Name=MANIFEST_SECRET_ID, SecretString=secrets.token_hex(32))
    topic = client("sns").create_topic(Name=REGRESSION_TOPIC)["TopicArn"]
    return Provisioned(
        *_batch(client("batch"), client("iam"), template),
        topic,
        github_app is not None,
        work_queues(client("sqs"), template),
    )


def _queue_attributes(
    template: dict[str, Any], logical_id: str, dlq_arn: str | None
) -> dict[str, str]:
    props = resources_of_type(template, "AWS::SQS::Queue")[logical_id]
    attributes: dict[str, str] = {
        name: str(props[name])
        for name in ("VisibilityTimeout", "MessageRetentionPeriod")
        if name in props
    }
    if dlq_arn is not None:
        redrive = props["RedrivePolicy"]
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": int(redrive["maxReceiveCount"])}
        )
    return attributes


def work_queues(sqs: Any, template: dict[str, Any]) -> WorkQueues:
    """The delivery queue with its dead-letter queue and redrive policy, and the overdue-run
    queue, as the template makes them (the overdue runs' dead letters are not kept here)."""
    dead = sqs.create_queue(
        QueueName=DELIVERY_DLQ,
        Attributes=_queue_attributes(template, "DeliveryDeadLetterQueue", None),
    )["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    deliveries = sqs.create_queue(
        QueueName=DELIVERY_QUEUE,
        Attributes=_queue_attributes(template, "DeliveryQueue", dead_arn),
    )["QueueUrl"]
    overdue = sqs.create_queue(
        QueueName=OVERDUE_QUEUE,
        Attributes=_queue_attributes(template, "OverdueRunQueue", None),
    )["QueueUrl"]
    return WorkQueues(deliveries, dead, overdue)


def _notify_queue(client: Callable[[str], Any], template: dict[str, Any]) -> str:
    """S3's events go to EventBridge and the collector's rule, as the template writes it, to
    an SQS queue (moto runs no Lambda)."""
    sqs = client("sqs")
    queue_url: str = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    events = client("events")
    events.put_rule(Name=QUEUE, EventPattern=json.dumps(notification_pattern(template)))
    events.put_targets(Rule=QUEUE, Targets=[{"Id": "collector", "Arn": queue_arn}])
    client("s3").put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={"EventBridgeConfiguration": {}},
    )
    return queue_url


def create_local_aws(
    endpoint: str,
    template_path: Path,
    suite: Path,
    *,
    github_app: str | None = None,
    restore: Callable[[Callable[[str], Any]], None] | None = None,
    lock: Callable[[Callable[[str], Any]], StackKeys] | None = None,
) -> LocalAws:
    """AWS as the template makes it, on moto's server at ``endpoint``; ``restore`` puts back
    a saved state before S3 notifications are on (so old run folders start nothing);
    ``lock`` then makes moto answer the stack's own key only (local/moto_front.py), which
    this process's environment takes."""
    os.environ.update(aws_environment(endpoint))
    os.environ.pop("AWS_SESSION_TOKEN", None)
    # moto keeps its state per process: start from nothing, as a fresh account would.
    requests.post(f"{endpoint}/moto-api/reset", timeout=10)
    # moto's Batch would start Docker containers; the local executor runs the jobs instead.
    requests.post(f"{endpoint}/moto-api/config", json={"batch": {"use_docker": False}}, timeout=10)
    template = load_template(template_path.read_text())
    client = functools.partial(local_client, endpoint)
    webhook_secret, github_token = secrets.token_hex(20), "ghs_" + secrets.token_hex(18)
    made = provision(
        client,
        template,
        [suite],
        webhook_secret=webhook_secret,
        github_token=github_token,
        github_app=github_app,
    )
    if restore is not None:
        restore(client)
    queue_url = _notify_queue(client, template)
    keys = lock(client) if lock is not None else StackKeys("local", "local")
    os.environ.update(aws_environment(endpoint, keys.access_key_id, keys.secret_access_key))
    boto3.DEFAULT_SESSION = None  # it keeps the credentials it first found
    assert made.queues is not None
    return LocalAws(
        endpoint,
        queue_url,
        made.queues,
        webhook_secret,
        github_token,
        made.job_queue,
        made.single_node_definition,
        made.multi_node_definition,
        made.regression_topic,
        made.github_app,
        keys.access_key_id,
        keys.secret_access_key,
    )


def add_chat_webhook(aws: LocalAws, url: str) -> None:
    """The chat stand-in's URL as the stack's chat webhook secret."""
    aws.client("secretsmanager").create_secret(Name=CHAT_WEBHOOK_SECRET_ID, SecretString=url)


def function_environment(
    aws: LocalAws | Provisioned, github_url: str, *, chat: bool = False
) -> dict[str, str]:
    """The handlers' settings, as template.yaml gives them in AWS (``chat``: with the chat
    webhook's secret, add_chat_webhook)."""
    return {
        "CHAT_WEBHOOK_SECRET_ARN": CHAT_WEBHOOK_SECRET_ID if chat else "",
        "TABLE_NAME": TABLE,
        "BUCKET_NAME": BUCKET,
        "WEBHOOK_SECRET_ID": WEBHOOK_SECRET_ID,
        "GITHUB_TOKEN_SECRET_ID": GITHUB_TOKEN_SECRET_ID,
        "GITHUB_API_URL": github_url,
        "GITHUB_BACKOFF_S": "0.1",
        "JOB_QUEUE": aws.job_queue,
        "DELIVERY_QUEUE_URL": aws.queues.deliveries if aws.queues else "",
        "OVERDUE_QUEUE_URL": aws.queues.overdue_runs if aws.queues else "",
        "SINGLE_NODE_JOB_DEFINITION": aws.single_node_definition,
        "MULTI_NODE_JOB_DEFINITION": aws.multi_node_definition,
        "BRANCHES": "develop",
        "ALLOWED_REPOSITORIES": LOCAL_REPOSITORIES,
        "REPORT_LINK_SECRET_ID": REPORT_LINK_SECRET_ID,
        "MANIFEST_SECRET_ID": MANIFEST_SECRET_ID,
        "ALERT_TOPIC_ARN": aws.regression_topic,
        "GITHUB_APP_SECRET_ID": GITHUB_APP_SECRET_ID if aws.github_app else "",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
