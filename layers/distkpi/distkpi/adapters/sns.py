"""The stack's regression topic (SNS): teams subscribe e-mail, a queue or Amazon Q Developer
in chat applications to it. Each alert goes out as plain text, and to subscribers over
HTTPS (Amazon Q Developer is one) as its custom-notification JSON, which is all it shows."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client
from distkpi.domain.chat.notices import chatbot_notification
from distkpi.exceptions import StorageError


class AlertTopic:
    def __init__(self, topic_arn: str, sns: Any | None = None) -> None:
        self.topic_arn = topic_arn
        self._sns = sns

    def publish(self, subject: str, message: str) -> None:
        if self._sns is None:
            self._sns = client("sns")
        per_protocol = {
            "default": message,
            "https": json.dumps(chatbot_notification(subject, message)),
        }
        try:
            self._sns.publish(
                TopicArn=self.topic_arn,
                Subject=subject,
                Message=json.dumps(per_protocol),
                MessageStructure="json",
            )
        except ClientError as exc:
            raise StorageError(f"alert not published to {self.topic_arn}: {exc}") from exc
