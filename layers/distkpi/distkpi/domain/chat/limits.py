"""The chat's rate limit: at most ``limit`` messages per suite and hour (UTC). The message
over the limit is replaced by one saying so; the rest of that hour's go to the SNS topic
only, and the first message of a later hour says how many were held back."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum


class Send(Enum):
    MESSAGE = "message"
    LIMIT_REACHED = "limit reached"
    NOTHING = "nothing"


def hour_of(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H")


def hour_before(at: datetime) -> str:
    return hour_of(at - timedelta(hours=1))


def what_to_send(count: int, limit: int) -> Send:
    """``count``: the suite's messages this hour, this one included."""
    if count <= limit:
        return Send.MESSAGE
    return Send.LIMIT_REACHED if count == limit + 1 else Send.NOTHING


def held_back(count_before: int, limit: int) -> int:
    """Of an hour's ``count_before`` alerts, how many the chat never showed."""
    return max(0, count_before - limit)
