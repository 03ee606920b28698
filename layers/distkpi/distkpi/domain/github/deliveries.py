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


@dataclass(frozen=True)
class QueuedDelivery:
    """A delivery the webhook verified, recorded (its body at ``key`` in the bucket) and
    handed to the launcher's queue: one SQS message."""

    delivery: str
    event: str
    key: str

    def to_json(self) -> dict[str, str]:
        return {"delivery": self.delivery, "event": self.event, "key": self.key}

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
        values = {name: fields.get(name) for name in ("delivery", "event", "key")}
        wrong = [name for name, value in values.items() if not isinstance(value, str) or not value]
        if wrong:
            raise ContractError(f"queued delivery without {', '.join(wrong)}")
        return cls(**values)  # type: ignore[arg-type]
