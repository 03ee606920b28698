"""A schedule: post the final statuses of runs that ended while GitHub was down (their
history site files with them), and hand the runs past their deadline to the overdue-run
queue (entry/deadlines.py settles each in its own invocation). The history site is updated
by each run's publication, never rebuilt here."""

from __future__ import annotations

from distkpi.entry.observability import logger
from distkpi.entry.wiring import sweeper
from distkpi.services import deadlines, publish  # noqa: F401 - loaded at init, not on the first event


def handle_schedule() -> dict[str, int]:
    """The statuses GitHub missed first (quick, and people wait for them), then the overdue
    runs handed over (a query and a message per ten runs)."""
    wired = sweeper()
    posted = wired.publisher.republish_unpublished()
    overdue = wired.deadlines.hand_over(wired.overdue_queue)
    logger.info("sweep done", overdue=overdue, republished=posted)
    return {"overdue": overdue, "republished": posted}
