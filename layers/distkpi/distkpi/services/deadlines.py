"""Runs that never finish (a node that never reported, an event that went missing): past
their deadline they are settled as they stand, and the jobs still holding GPUs stopped. The
sweeper finds them and hands each to a queue (`hand_over`); the deadlines function settles
each in its own invocation (`expire`), so a sweep's time never bounds how many are settled."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from aws_lambda_powertools import Logger

from distkpi.domain.records import RunRecord, RunStatus
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
    # a run's time from its first job's start (Batch's RUNNING), and before that its time
    # in the job queue, bounded apart
    timeout_s: int
    queue_wait_s: int
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)
    # what settling one run may take: its configs' files are bounded (contracts.py: 256 MiB
    # a config), so a run started with this much time left ends inside the invocation and
    # never holds up those after it
    run_budget_s: float = RUN_BUDGET_S

    def overdue(self) -> list[str]:
        """The runs still running past their deadline: `queue_wait_s` after they were made
        while none of their jobs has started, `timeout_s` after their first job started (a
        run with extra time, a paired one, that much later); earliest first."""
        queued = self.runs.running_since_before(self._ago(self.queue_wait_s))
        return self.runs.started_before(self._ago(self.timeout_s)) + queued

    def hand_over(self, queue: WorkQueue) -> int:
        """Each overdue run to ``queue``, for `expire` in another invocation; how many. A
        run handed over twice (the next sweep came first) is settled once: `expire` of a
        run no longer running does nothing."""
        sent = queue.send_all({"run_id": run_id} for run_id in self.overdue())
        if sent:
            logger.warning("runs past their deadline handed over", runs=sent)
            self.count("RunsOverdue", sent)
        return sent

    def expire(self, run_id: str) -> bool:
        """Settle one overdue run as it stands and stop its jobs; False when it is not
        overdue (any more): settled, finished or cancelled since it was handed over."""
        run = self.runs.get(run_id)
        if run is None or run.status is not RunStatus.RUNNING or not self._past(run):
            logger.info("run handed over is not overdue now", run_id=run_id)
            return False
        logger.warning("run past its deadline", run_id=run_id, timeout_s=self.timeout_s)
        reason = self._reason(run)
        jobs = self.settler.expire_run(run_id, reason)
        self.count("RunsTimedOut")
        stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        return True

    def expire_overdue(self, time_left: Callable[[], float] | None = None) -> int:
        """Settle every overdue run in this invocation, each only while ``time_left``
        (seconds) holds a run's budget: what the deadlines function does one run at a time,
        for a caller with no queue (the service tests). How many were settled."""
        overdue = self.overdue()
        expired = 0
        for index, run_id in enumerate(overdue):
            if time_left is not None and time_left() < self.run_budget_s:
                self.count("RunsDeferred", len(overdue) - index)
                break
            try:
                expired += self.expire(run_id)
            except Exception:  # one broken run must not keep the others from their deadline
                logger.exception("overdue run not settled", run_id=run_id)
                self.count("SweepFailures")
        return expired

    def _ago(self, seconds: int) -> str:
        return (self.clock() - timedelta(seconds=seconds)).isoformat(timespec="milliseconds")

    def _past(self, run: RunRecord) -> bool:
        if run.started_at is None:
            return run.created_at < self._ago(self.queue_wait_s)
        return run.timeout_counted_from < self._ago(self.timeout_s)

    def _reason(self, run: RunRecord) -> str:
        if run.started_at is None:
            waited = duration(self.queue_wait_s)
            return f"timed out: no job started {waited} after the run was queued"
        allowed = duration(self.timeout_s + run.extra_time_s)
        queued = duration(run.queue_wait_s_taken or 0)
        return f"timed out: no result {allowed} after its first job started ({queued} queued)"
