"""The stack's regression topic (SNS): teams subscribe email or a chat webhook to it."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client
from distkpi.exceptions import StorageError


class AlertTopic:
    def __init__(self, topic_arn: str, sns: Any | None = None) -> None:
        self.topic_arn = topic_arn
        self._sns = sns

    def publish(self, subject: str, message: str) -> None:
        if self._sns is None:
            self._sns = client("sns")
        try:
            self._sns.publish(TopicArn=self.topic_arn, Subject=subject, Message=message)
        except ClientError as exc:
            raise StorageError(f"alert not published to {self.topic_arn}: {exc}") from exc
