"""A GitHub delivery done once: what its work answered, and whether that was an earlier
attempt's (services/ports.Deliveries; adapters/dynamo/deliveries.py keeps them); and a
delivery as it waits in the launcher's queue."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from distkpi.exceptions import ContractError


@dataclass(frozen=True)
class Once:
    """A delivery's answer (JSON), and whether it was stored by an earlier attempt; None
    for a repeat while the first attempt's claim is in progress."""

    answer: dict[str, Any] | None
    repeat: bool


# SQS takes messages of 256 KiB: a body up to this (JSON-escaped in the message) travels in
# it, a bigger one is kept in the bucket and the message names its key
MAX_INLINE_BODY_BYTES = 192 * 1024


@dataclass(frozen=True)
class QueuedDelivery:
    """A delivery the webhook verified and handed to the launcher's queue: one SQS message,
    with its body in it (``body``), or recorded in the bucket at ``key`` when too big."""

    delivery: str
    event: str
    key: str | None = None
    body: str | None = None

    @classmethod
    def of(cls, delivery: str, event: str, body: bytes, key: str) -> QueuedDelivery:
        """The message for ``body``: in it when it fits, else to be kept at ``key``."""
        # its escaped JSON is never shorter than its bytes: a big body is not decoded
        text = _utf8(body) if len(body) <= MAX_INLINE_BODY_BYTES else None
        if text is not None and len(json.dumps(text)) <= MAX_INLINE_BODY_BYTES:
            return cls(delivery, event, body=text)
        return cls(delivery, event, key=key)

    def to_json(self) -> dict[str, str]:
        where = {"key": self.key} if self.key is not None else {"body": self.body or ""}
        return {"delivery": self.delivery, "event": self.event, **where}

    def receipt(self) -> dict[str, str]:
        """What the webhook's claim keeps as its answer: the message without the body."""
        return {k: v for k, v in self.to_json().items() if k != "body"}

    @classmethod
    def from_message(cls, body: str) -> QueuedDelivery:
        """The message's delivery; ContractError naming what is wrong (such a message is
        retried, then kept by the dead-letter queue)."""
        try:
            fields = json.loads(body)
        except ValueError as exc:
            raise ContractError(f"queued delivery is not JSON: {exc}") from exc
        if not isinstance(fields, dict):
            raise ContractError("queued delivery is not a JSON object")
        delivery, event = fields.get("delivery"), fields.get("event")
        values = {"delivery": delivery, "event": event}
        wrong = [name for name, value in values.items() if not isinstance(value, str) or not value]
        if wrong or not isinstance(delivery, str) or not isinstance(event, str):
            raise ContractError(f"queued delivery without {', '.join(wrong)}")
        key, inline = fields.get("key"), fields.get("body")
        if isinstance(key, str) and key and inline is None:
            return cls(delivery, event, key=key)
        if isinstance(inline, str) and inline and key is None:
            return cls(delivery, event, body=inline)
        raise ContractError("queued delivery without its body or key (exactly one)")


def _utf8(body: bytes) -> str | None:
    try:
        return body.decode()
    except UnicodeDecodeError:
        return None


# what the stack's schedule (template.yaml, NightlySchedule) puts on the delivery queue
SCHEDULE_MESSAGE = {"event": "schedule"}


def is_schedule(body: str) -> bool:
    """Whether a queue message is the schedule's rather than a GitHub delivery's."""
    try:
        return bool(json.loads(body) == SCHEDULE_MESSAGE)
    except ValueError:
        return False
