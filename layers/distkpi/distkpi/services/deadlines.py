"""Runs that never finish (a node that never reported, an event that went missing): past
their deadline they are settled as they stand, and the jobs still holding GPUs stopped. The
sweeper finds them and hands each to a queue (`hand_over`); the deadlines function settles
each in its own invocation (`expire`), so a sweep's time never bounds how many are settled."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools import Logger

from distkpi.domain.records import RunStatus
from distkpi.services.jobs import stop_jobs
from distkpi.services.ports import (
    Clock,
    Counter,
    JobLauncher,
    Runs,
    WorkQueue,
    no_metrics,
    utcnow,
)
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

    def overdue(self) -> list[str]:
        """The runs still running past their deadline (`RunRecord.deadline`: the queue wait
        while no job has started, the run timeout from the first job's start), earliest
        first; then those made before deadlines were kept, `timeout_s` after they were made
        (a run with extra time, a paired one, that much later)."""
        now = self.clock()
        by_deadline = self.runs.overdue(now.isoformat(timespec="milliseconds"))
        cutoff = now - timedelta(seconds=self.timeout_s)
        legacy = self.runs.running_since_before(cutoff.isoformat(timespec="milliseconds"))
        return by_deadline + [r for r in legacy if r not in by_deadline]

    def hand_over(self, queue: WorkQueue) -> int:
        """Each overdue run to ``queue``, for `expire` in another invocation; how many. A
        run handed over twice (the next sweep came first) is settled once: `expire` of a
        run no longer running does nothing."""
        overdue = self.overdue()
        sent = queue.send_all({"run_id": run_id} for run_id in overdue)
        if sent:
            logger.warning("runs past their deadline handed over", runs=sent)
            self.count("RunsOverdue", sent)
        return sent

    def expire(self, run_id: str) -> bool:
        """Settle one overdue run as it stands and stop its jobs; False when it is not
        overdue (any more): settled, finished or cancelled since it was handed over."""
        if not self._overdue_now(run_id):
            logger.info("run handed over is not overdue now", run_id=run_id)
            return False
        logger.warning("run past its deadline", run_id=run_id, timeout_s=self.timeout_s)
        reason = self._reason(run_id)
        jobs = self.settler.expire_run(run_id, reason)
        self.count("RunsTimedOut")
        stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        return True

    def _overdue_now(self, run_id: str) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.status is not RunStatus.RUNNING:
            return False
        now = self.clock()
        if run.deadline is not None:
            return run.deadline < now.isoformat(timespec="milliseconds")
        cutoff = now - timedelta(seconds=self.timeout_s)
        return run.timeout_counted_from < cutoff.isoformat(timespec="milliseconds")

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
        if run is not None and run.deadline is not None and run.run_timeout_s is not None:
            if run.started_at is None:
                waited = duration(run.queue_wait_s or 0)
                return f"timed out: no job started {waited} after the run was queued"
            allowed = duration(run.run_timeout_s + run.extra_time_s)
            queued = duration(run.queue_wait_s_taken or 0)
            return f"timed out: no result {allowed} after its first job started ({queued} queued)"
        legacy = self.timeout_s + (run.extra_time_s if run is not None else 0)
        return f"timed out: no result {duration(legacy)} after the run started"
