"""What AWS would do between the handlers, done here: each submitted Batch job run by the
executor as local processes, its end sent to job_events, every S3 notification delivered
to the collector, and the run folders and reports copied out before the stack goes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from distkpi.domain.layout import REPORT_PAGE, REPORTS, RUNS, SITE
from distkpi.domain.records import RunRecord, RunStatus
from distkpi_cli.confined import UnsafeNameError, confined
from distkpi_cli.local.aws_stack import BUCKET
from distkpi_cli.local.executor import Executor, JobOutcome, LocalJob, job_from_request
from distkpi_cli.local.stack import LocalStack

SETTLE_TIMEOUT_S = 60
BATCH_STATES = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED")


class Dispatcher:
    def __init__(
        self, stack: LocalStack, out: Path, source: Path | None, keep_work: bool = False
    ) -> None:
        self.stack = stack
        self.out = out
        self.source = source
        # each node's checkout is a full clone: kept only when asked or when a node failed
        self.keep_work = keep_work

    def submitted_jobs(self, run_ids: list[str]) -> list[LocalJob]:
        """The Batch jobs of these runs, whatever state moto has moved them to. moto's Batch
        keeps no node overrides, so each job is rebuilt from the request the launcher stored."""
        batch = self.stack.aws.client("batch")
        definition = self.stack.aws.single_node_definition
        default = batch.describe_job_definitions(jobDefinitions=[definition])["jobDefinitions"][0][
            "containerProperties"
        ]["command"]
        job_ids = {
            summary["jobId"]
            for status in BATCH_STATES
            for page in batch.get_paginator("list_jobs").paginate(
                jobQueue=self.stack.aws.job_queue, jobStatus=status
            )
            for summary in page["jobSummaryList"]
        }
        jobs = []
        for job_id in job_ids:
            record = self.stack.jobs.get(job_id)
            if record is not None and record.run_id in run_ids:
                jobs.append(job_from_request(job_id, record.config, record.request, default))
        return sorted(jobs, key=lambda j: j.name)

    def run_jobs(self, run_ids: list[str], faults: dict[tuple[str, int], int]) -> list[JobOutcome]:
        stack = self.stack
        executor = Executor(
            self.source,
            self.out / "work",
            stack.worker_environment(),
            faults,
            keys=stack.manifest_keys.for_config,
        )
        outcomes = []
        jobs = self.submitted_jobs(run_ids)
        for number, job in enumerate(jobs, 1):
            stack.say(f"job {number}/{len(jobs)} {job.config}: {job.nodes} node(s) running")
            outcome = executor.run(job, tick=stack.drain_s3_events)
            state = f"failed: {outcome.reason}" if outcome.failed else "done"
            stack.say(
                f"job {number}/{len(jobs)} {job.config}: {state} in {outcome.seconds:.1f}s; "
                f"events delivered {stack.events_delivered}"
            )
            stack.drain_s3_events()
            stack.job_ended(job.job_id, job.name, outcome.failed, outcome.reason)
            outcomes.append(outcome)
        for run_id in run_ids:
            ended = [o for o in outcomes if o.run_id == run_id]
            if said := executor.end_run(run_id, ended, keep=self.keep_work):
                stack.say(said)
        return outcomes

    def run(self, run_id: str) -> RunRecord:
        run = self.stack.runs.get(run_id)
        if run is None:
            raise RuntimeError(f"no run {run_id} in the local stack")
        return run

    def wait_settled(self, run_ids: list[str]) -> list[RunRecord]:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            self.stack.drain_s3_events()
            runs = [self.run(r) for r in run_ids]
            if all(r.status is RunStatus.DONE for r in runs):
                return runs
            time.sleep(0.5)
        raise RuntimeError(f"runs did not settle within {SETTLE_TIMEOUT_S}s")

    def download(self, prefix: str) -> Path:
        """Copy s3://bucket/<prefix> out of the stack (it is gone when the stack stops).
        A key that would leave the folder (``runs/<run>//etc/x``, ``../``), or that no file
        can take there, is not copied, and said so."""
        s3 = self.stack.aws.client("s3")
        target = confined(self.out, prefix.rstrip("/"))
        refused = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            for obj in page.get("Contents", []):
                try:
                    path = confined(target, obj["Key"][len(prefix) :])
                    path.parent.mkdir(parents=True, exist_ok=True)
                    s3.download_file(BUCKET, obj["Key"], str(path))
                except (UnsafeNameError, OSError) as exc:
                    refused.append(f"{obj['Key']!r} ({exc})")
        if refused:
            self.stack.say(f"not copied out of {prefix}: {'; '.join(refused)}")
        return target

    def requests(self, run_id: str) -> list[dict[str, Any]]:
        """The exact SubmitJob request of each of the run's jobs, by config."""
        found = []
        for config in self.stack.runs.configs(run_id):
            job = self.stack.jobs.get(config.job_id) if config.job_id else None
            if job is not None:
                found.append(dict(job.request))
        return found

    def copy_out(self, run_id: str) -> tuple[Path, Path]:
        """The run folder and the report's page, on local disk, and the history site as the
        publisher left it in the bucket (`<out>/site`, beside the reports its runs link)."""
        folder = self.download(f"{RUNS}{run_id}/")
        report = self.download(f"{REPORTS}{run_id}/") / REPORT_PAGE
        with_twins(self.download(SITE) / "api")
        return folder, report


def with_twins(api: Path) -> None:
    """Each JSON file of a site's api/ folder with its `.js` twin beside it, which the
    application reads from file:// (reporting/app_twins.py)."""
    from distkpi.reporting.app_twins import twin, twin_name

    for path in sorted(api.rglob("*.json")):
        name = path.relative_to(api).as_posix()
        (api / twin_name(name)).write_bytes(twin(name, path.read_bytes()))
