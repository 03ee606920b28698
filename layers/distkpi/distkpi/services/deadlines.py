"""Runs that never finish (a node that never reported, an event that went missing): past
their deadline they are settled as they stand, and the jobs still holding GPUs stopped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools import Logger

from distkpi.services.jobs import stop_jobs
from distkpi.services.ports import Clock, Counter, JobLauncher, Runs, no_metrics, utcnow
from distkpi.services.settle import ConfigSettler

logger = Logger(child=True)
RUN_BUDGET_S = 120.0


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
    # what settling one run may take: its configs' files are bounded (contracts.py: 256 MiB
    # a config), so a run started with this much time left ends inside the invocation and
    # never holds up those after it
    run_budget_s: float = RUN_BUDGET_S

    def expire_overdue(self, time_left: Callable[[], float] | None = None) -> int:
        """Settle the runs still running `timeout_s` after they started (a run with extra
        time, a paired one, that much later), oldest first, each only while ``time_left``
        (seconds of the invocation) holds a run's budget; the others wait for the next
        sweep. How many were settled."""
        cutoff = self.clock() - timedelta(seconds=self.timeout_s)
        overdue = self.runs.running_since_before(cutoff.isoformat(timespec="milliseconds"))
        expired = 0
        for index, run_id in enumerate(overdue):
            if time_left is not None and time_left() < self.run_budget_s:
                left = len(overdue) - index
                logger.warning("sweep's time spent: overdue runs left for the next", runs=left)
                self.count("RunsDeferred", left)
                break
            logger.warning("run past its deadline", run_id=run_id, timeout_s=self.timeout_s)
            try:
                reason = self._reason(run_id)
                jobs = self.settler.expire_run(run_id, reason)
            except Exception:  # one broken run must not keep the others from their deadline
                logger.exception("overdue run not settled", run_id=run_id)
                self.count("SweepFailures")
                continue
            self.count("RunsTimedOut")
            expired += 1
            stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        return expired

    def _reason(self, run_id: str) -> str:
        run = self.runs.get(run_id)
        allowed = self.timeout_s + (run.extra_time_s if run is not None else 0)
        return f"timed out: no result {duration(allowed)} after the run started"
