"""SQS queues drained into the real handlers, as Lambda's event source mapping would (moto
runs none): a batch received, given to the handler as an SQS event, the records it does not
report as failed deleted. A failed record stays in flight until its visibility timeout is
over, as in SQS (minutes: the template's), and is then given again, until the queue's
redrive policy moves it to the dead-letter queue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REGION = "us-east-1"


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """What Lambda gives a function for a batch of SQS messages."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


@dataclass
class Drained:
    """What draining gave: the handler's answers (each ``answers_key`` entry) and how many
    batches and records it handled, and how many of those failed."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    failed: int = 0


def drain(
    sqs: Any,
    url: str,
    handler: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    batch_size: int = 10,
    answers_key: str | None = None,
) -> Drained:
    """Every message of the queue to ``handler`` until it is empty."""
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    drained = Drained()
    while True:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=batch_size, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return drained
        result = handler(sqs_event(messages, arn)) or {}
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        drained.batches += 1
        drained.records += len(messages)
        drained.failed += len(failed)
        if answers_key is not None:
            drained.answers.extend(result.get(answers_key, []))
        for message in messages:
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
