"""A schedule: post the final statuses of runs that ended while GitHub was down, settle the
runs past their deadline, and rebuild the history site's stale pages."""

from __future__ import annotations

from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import sweeper
from distkpi.services import deadlines, publish, site  # noqa: F401 - loaded at init, not on the first event


def handle_schedule() -> dict[str, int]:
    timed_out = sweeper().deadlines.expire_overdue()
    posted = sweeper().publisher.republish_unpublished()
    try:
        rebuilt = sweeper().site.refresh()
    except Exception:  # the site is a view: it never holds back the statuses
        logger.exception("history site not rebuilt")
        count("SiteFailures")
        rebuilt = 0
    logger.info("sweep done", timed_out=timed_out, republished=posted, site_rebuilt=rebuilt)
    return {"timed_out": timed_out, "republished": posted, "site_rebuilt": rebuilt}
