"""Stopping a run's Batch jobs, which holds GPUs nobody waits for any more."""

from __future__ import annotations

from collections.abc import Iterable

from aws_lambda_powertools import Logger

from distkpi.exceptions import LaunchError
from distkpi.services.ports import Counter, JobLauncher

logger = Logger(child=True)


def stop_jobs(
    launcher: JobLauncher | None,
    job_ids: Iterable[str],
    run_id: str,
    reason: str,
    count: Counter,
) -> None:
    """Terminate each job; one Batch refuses is logged and counted, and the rest still go."""
    for job_id in job_ids:
        if launcher is None:
            logger.warning("no Batch launcher; job left running", job_id=job_id, run_id=run_id)
            continue
        try:
            launcher.terminate(job_id, reason)
        except LaunchError:
            logger.exception("job not terminated", job_id=job_id, run_id=run_id)
            count("JobsNotTerminated")
            continue
        logger.info("job terminated", job_id=job_id, run_id=run_id)
