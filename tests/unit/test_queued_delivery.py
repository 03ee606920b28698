"""A queued delivery's message: the body in it when it fits an SQS message, else the key it
was kept at in the bucket; a message of either shape is read back, anything else refused
with what is wrong (SQS then keeps it in the dead-letter queue)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from distkpi.domain.github.deliveries import MAX_INLINE_BODY_BYTES, QueuedDelivery
from distkpi.exceptions import ContractError

PUSH = json.loads((Path(__file__).parents[1] / "events" / "push.json").read_text())
DELIVERY = PUSH["headers"]["X-GitHub-Delivery"]
KEY = f"deliveries/{DELIVERY}.json"


def test_a_push_travels_in_its_message_and_comes_back_as_it_was_sent() -> None:
    body = json.dumps(PUSH["payload"]).encode()
    queued = QueuedDelivery.of(DELIVERY, "push", body, KEY)
    assert queued.key is None
    read = QueuedDelivery.from_message(json.dumps(queued.to_json()))
    assert read == queued and read.body is not None
    assert json.loads(read.body) == PUSH["payload"]
    assert queued.receipt() == {"delivery": DELIVERY, "event": "push"}


def test_a_body_past_the_limit_once_escaped_is_kept_in_the_bucket() -> None:
    payload = {**PUSH["payload"], "padding": "\u00e9" * (MAX_INLINE_BODY_BYTES // 5)}
    body = json.dumps(payload, ensure_ascii=False).encode()
    assert len(body) < MAX_INLINE_BODY_BYTES  # its bytes fit; JSON-escaped in a message not
    queued = QueuedDelivery.of(DELIVERY, "push", body, KEY)
    assert queued.to_json() == {"delivery": DELIVERY, "event": "push", "key": KEY}


def test_a_message_queued_before_bodies_travelled_in_it_is_still_read() -> None:
    message = json.dumps({"delivery": DELIVERY, "event": "push", "key": KEY})
    assert QueuedDelivery.from_message(message) == QueuedDelivery(DELIVERY, "push", key=KEY)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"delivery": DELIVERY, "event": "push"}, "without its body or key (exactly one)"),
        (
            {"delivery": DELIVERY, "event": "push", "key": KEY, "body": "{}"},
            "without its body or key (exactly one)",
        ),
        ({"event": "push", "body": "{}"}, "without delivery"),
    ],
)
def test_a_message_with_neither_or_both_is_refused(message: dict[str, str], problem: str) -> None:
    with pytest.raises(ContractError, match=f"^{re.escape(f'queued delivery {problem}')}$"):
        QueuedDelivery.from_message(json.dumps(message))
