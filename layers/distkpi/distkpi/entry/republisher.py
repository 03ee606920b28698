"""A schedule: post the final statuses of runs that ended while GitHub was down."""

from __future__ import annotations

from distkpi.entry.observability import logger
from distkpi.entry.wiring import wiring
from distkpi.services import fanin  # noqa: F401 - loaded at init, not on the first event


def handle_schedule() -> int:
    posted = wiring().fanin.republish_unpublished()
    logger.info("republished statuses", count=posted)
    return posted
