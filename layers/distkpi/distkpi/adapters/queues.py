"""SQS: the queues work is handed to (a delivery to the launcher, an overdue run to its
settler), each message one JSON object."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client
from distkpi.exceptions import StorageError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

BATCH_MAX = 10  # SendMessageBatch takes at most ten entries


class MessageQueue:
    def __init__(self, url: str, sqs: SQSClient | None = None) -> None:
        self.url = url
        self._sqs = sqs

    @property
    def sqs(self) -> SQSClient:
        if self._sqs is None:
            self._sqs = cast("SQSClient", client("sqs"))
        return self._sqs

    def send(self, message: Mapping[str, Any]) -> None:
        try:
            self.sqs.send_message(QueueUrl=self.url, MessageBody=json.dumps(message))
        except ClientError as exc:
            raise StorageError(f"cannot enqueue on {self.url}: {exc}") from exc

    def send_all(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Every message, ten to a request; how many were sent. An entry SQS refuses raises
        (the caller's next attempt sends it again: each consumer is idempotent)."""
        batch = [json.dumps(m) for m in messages]
        for start in range(0, len(batch), BATCH_MAX):
            entries = [
                {"Id": str(i), "MessageBody": body}
                for i, body in enumerate(batch[start : start + BATCH_MAX])
            ]
            try:
                answer = self.sqs.send_message_batch(QueueUrl=self.url, Entries=entries)  # type: ignore[arg-type]
            except ClientError as exc:
                raise StorageError(f"cannot enqueue on {self.url}: {exc}") from exc
            if answer.get("Failed"):
                raise StorageError(f"SQS refused {len(answer['Failed'])} messages on {self.url}")
        return len(batch)
