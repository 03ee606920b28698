"""A run's jobs start: its deadline, which counted its time in the job queue until now
(the stack's QueueWaitSeconds), counts its run time from here (RunTimeoutSeconds,
services/deadlines.py), and the queue wait it had is kept on the run (`started_at`) and
logged."""

from __future__ import annotations

from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.services.ports import Counter, Jobs, Runs, no_metrics

logger = Logger(child=True)


@dataclass
class JobStarts:
    jobs: Jobs
    runs: Runs
    count: Counter = no_metrics

    def on_job_running(self, job_id: str, at: str) -> bool:
        """A Batch job (or a node of one, `<job>#<node>`) went RUNNING at ``at`` (ISO): True
        when it was its run's first, which now counts its run time from then."""
        job = self.jobs.get(job_id.split("#", maxsplit=1)[0])
        if job is None:
            logger.info("started job is not ours", job_id=job_id)
            return False
        run = self.runs.get(job.run_id)
        if run is None or run.started_at is not None:
            return False
        if not self.runs.mark_jobs_started(run, at):
            return False
        waited = self.runs.get(job.run_id)
        queued_s = waited.queue_wait_s_taken if waited is not None else None
        logger.info("run's first job started", run_id=job.run_id, queue_wait_s=queued_s)
        self.count("RunsStarted_QueueWaitSeconds", queued_s or 0)
        return True
