"""The history site in the bucket (site/): rebuilt by the sweeper for every history of a
configured branch that has a run newer than its pages (pull requests' histories are not
published)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_lambda_powertools import Logger

from distkpi.domain.records import PULL_REQUEST_HISTORY
from distkpi.reporting.site import REPORT_URL, build_series, write_index
from distkpi.services.ports import Clock, Counter, History, RunFolders, no_metrics, utcnow

logger = Logger(child=True)
SITE = "site/"


@dataclass(frozen=True)
class BucketSite:
    store: RunFolders
    prefix: str = SITE

    def write(self, name: str, data: bytes, content_type: str) -> None:
        self.store.put_bytes(self.prefix + name, data, content_type)


@dataclass
class SiteRefresher:
    history: History
    store: RunFolders
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def refresh(self) -> int:
        """Rebuild the stale histories' pages and the index; how many were rebuilt."""
        stale = [
            s
            for s in self.history.series()
            if not s.branch.startswith(PULL_REQUEST_HISTORY)
            and (s.site_built_at is None or s.site_built_at < s.finished_at)
        ]
        if not stale:
            return 0
        site = BucketSite(self.store)
        for series in stale:
            built_at = self.clock().isoformat(timespec="seconds")
            build_series(self.history, series, site, lambda r: REPORT_URL.format(run_id=r))
            self.history.mark_site_built(series, built_at)
        write_index(site, self.history.series())
        self.count("SitePagesRebuilt", len(stale))
        logger.info("history site rebuilt", histories=len(stale))
        return len(stale)
