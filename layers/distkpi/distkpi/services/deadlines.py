"""Runs that never finish (a node that never reported, an event that went missing): past
their deadline they are settled as they stand, and the jobs still holding GPUs stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools import Logger

from distkpi.services.jobs import stop_jobs
from distkpi.services.ports import Clock, Counter, JobLauncher, Runs, no_metrics, utcnow
from distkpi.services.settle import ConfigSettler

logger = Logger(child=True)


def duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}min"
    return f"{seconds}s"


@dataclass
class RunDeadlines:
    runs: Runs
    settler: ConfigSettler
    launcher: JobLauncher | None
    timeout_s: int
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def expire_overdue(self) -> int:
        """Settle every run still running `timeout_s` after it started; how many there were."""
        cutoff = self.clock() - timedelta(seconds=self.timeout_s)
        overdue = self.runs.running_since_before(cutoff.isoformat(timespec="milliseconds"))
        reason = f"timed out: no result {duration(self.timeout_s)} after the run started"
        expired = 0
        for run_id in overdue:
            logger.warning("run past its deadline", run_id=run_id, timeout_s=self.timeout_s)
            try:
                jobs = self.settler.expire_run(run_id, reason)
            except Exception:  # one broken run must not keep the others from their deadline
                logger.exception("overdue run not settled", run_id=run_id)
                self.count("SweepFailures")
                continue
            self.count("RunsTimedOut")
            expired += 1
            stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        return expired
