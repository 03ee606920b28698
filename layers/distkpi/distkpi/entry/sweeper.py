"""A schedule: post the final statuses of runs that ended while GitHub was down, and settle
the runs past their deadline."""

from __future__ import annotations

from distkpi.entry.observability import logger
from distkpi.entry.wiring import sweeper
from distkpi.services import deadlines, publish  # noqa: F401 - loaded at init, not on the first event


def handle_schedule() -> dict[str, int]:
    timed_out = sweeper().deadlines.expire_overdue()
    posted = sweeper().publisher.republish_unpublished()
    logger.info("sweep done", timed_out=timed_out, republished=posted)
    return {"timed_out": timed_out, "republished": posted}
