"""A schedule: post the final statuses of runs that ended while GitHub was down, hand the
runs past their deadline to the overdue-run queue (entry/deadlines.py settles each in its
own invocation), and rebuild the history site's stale pages."""

from __future__ import annotations

from collections.abc import Callable

from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import sweeper
from distkpi.services import deadlines, publish, site  # noqa: F401 - loaded at init, not on the first event

SITE_BUDGET_S = 60.0  # what rebuilding the stale pages may take at most (bench/site_build.py)


def handle_schedule(time_left: Callable[[], float]) -> dict[str, int]:
    """The statuses GitHub missed first (quick, and people wait for them), then the overdue
    runs handed over (a query and a message per ten runs), then the site with what is left."""
    wired = sweeper()
    posted = wired.publisher.republish_unpublished()
    overdue = wired.deadlines.hand_over(wired.overdue_queue)
    rebuilt = 0
    if time_left() < SITE_BUDGET_S:
        logger.warning("history site left for the next sweep", seconds_left=time_left())
        count("SiteDeferred")
    else:
        try:
            rebuilt = wired.site.refresh()
        except Exception:  # the site is a view: it never holds back the statuses
            logger.exception("history site not rebuilt")
            count("SiteFailures")
    logger.info("sweep done", overdue=overdue, republished=posted, site_rebuilt=rebuilt)
    return {"overdue": overdue, "republished": posted, "site_rebuilt": rebuilt}
