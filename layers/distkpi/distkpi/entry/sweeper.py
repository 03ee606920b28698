"""A schedule: post the final statuses of runs that ended while GitHub was down (their
history site files with them), and settle the runs past their deadline. The history site
is updated by each run's publication, never rebuilt here."""

from __future__ import annotations

from collections.abc import Callable

from distkpi.entry.observability import logger
from distkpi.entry.wiring import sweeper
from distkpi.services import deadlines, publish  # noqa: F401 - loaded at init, not on the first event


def handle_schedule(time_left: Callable[[], float]) -> dict[str, int]:
    """The statuses GitHub missed first (quick, and people wait for them), then the overdue
    runs while the invocation has a run's budget left (the rest wait for the next sweep)."""
    posted = sweeper().publisher.republish_unpublished()
    timed_out = sweeper().deadlines.expire_overdue(time_left)
    logger.info("sweep done", timed_out=timed_out, republished=posted)
    return {"timed_out": timed_out, "republished": posted}
