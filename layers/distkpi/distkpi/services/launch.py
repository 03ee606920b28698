"""The webhook's side: a run per suite, its records, one Batch job per config, `pending`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from aws_lambda_powertools import Logger

from distkpi.adapters.batch import BatchLauncher
from distkpi.adapters.dynamo import RunRepository
from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.commit_status import State, pending_description
from distkpi.domain.contracts import RunSpec
from distkpi.domain.planning import plan_jobs, run_id_for, run_spec_for
from distkpi.domain.suites import BrokenSuite, Suite
from distkpi.domain.webhook import Trigger
from distkpi.exceptions import LaunchError
from distkpi.services.jobs import stop_jobs
from distkpi.services.statuses import Clock, Counter, StatusPublisher, no_metrics, utcnow

logger = Logger(child=True)


@dataclass
class RunStarter:
    runs: RunRepository
    store: S3RunStore
    statuses: StatusPublisher
    launcher: BatchLauncher | None
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def start_runs(self, trigger: Trigger, delivery: str, suites: Iterable[Suite]) -> list[str]:
        started: list[str] = []
        for suite in suites:
            run_id = run_id_for(suite.name, trigger.sha, delivery)
            run = run_spec_for(run_id, trigger, suite)
            record = {
                **asdict(trigger),
                "run_id": run_id,
                "model": suite.name,
                "spec": run.to_json(),
                "delivery": delivery,
                "verdict_settings": suite.verdict.model_dump(mode="json"),
            }
            created_at = self.clock().isoformat(timespec="milliseconds")
            if not self.runs.create_run(record, {c.name: c.nodes for c in run.configs}, created_at):
                logger.info("run exists already", run_id=run_id)
                continue
            self.store.put_json(f"runs/{run_id}/run.json", run.to_json())
            self._submit(run, suite)
            self.count("RunsStarted")
            started.append(run_id)
            gpus = max(c.gpus for c in run.configs)
            self.statuses.post(run, State.PENDING, pending_description(len(run.configs), gpus))
            logger.info("run started", run_id=run_id, sha=trigger.sha, model=suite.name)
        return started

    def supersede(self, trigger: Trigger, models: Iterable[str]) -> list[str]:
        """Keep only the runs of a pull request's newest head, per suite: the others are
        cancelled and their jobs stopped, since nobody waits for those results and the new
        runs need the GPUs. "Newest" is by the pull request's `updated_at`, so a delivery
        that arrives late cancels its own runs, not the newer ones. The runs cancelled."""
        if trigger.pull_request is None:
            return []
        wanted = set(models)
        entries = [
            e
            for e in self.runs.runs_of_pull_request(trigger.repo, trigger.pull_request)
            if e["model"] in wanted
        ]
        cancelled = []
        for model in sorted(wanted):
            runs = [e for e in entries if e["model"] == model]
            if not runs:
                continue
            newest = max(runs, key=lambda e: (str(e.get("updated_at") or ""), str(e["SK"])))
            for entry in runs:
                if entry["sha"] != newest["sha"] and self._cancel(entry, str(newest["sha"])):
                    cancelled.append(str(entry["run_id"]))
        return cancelled

    def _cancel(self, entry: dict[str, Any], by_sha: str) -> bool:
        run_id = str(entry["run_id"])
        reason = f"cancelled: superseded by {by_sha[:10]}"
        if not self.runs.cancel_run(run_id, reason, self.clock().isoformat(timespec="seconds")):
            return False  # finished, or cancelled already
        item = self.runs.get_run(run_id)
        if item is not None:
            self.statuses.post(RunSpec.model_validate(item["spec"]), State.ERROR, reason)
        pending = [c for c in self.runs.configs(run_id) if c["state"] == "pending"]
        jobs = [str(c["job_id"]) for c in pending if "job_id" in c]
        stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        self.count("RunsSuperseded")
        logger.info("run superseded", run_id=run_id, by=by_sha)
        return True

    def report_broken(self, trigger: Trigger, broken: Iterable[BrokenSuite]) -> None:
        """A suite that cannot be read gets an `error` status, not a silent skip."""
        for suite in broken:
            logger.error("suite not valid; not run", suite=suite.name, problem=suite.problem)
            self.count("SuitesInvalid")
            self.statuses.post_broken_suite(trigger, suite)

    def _submit(self, run: RunSpec, suite: Suite) -> None:
        if self.launcher is None:
            raise LaunchError("no Batch launcher configured")
        for plan in plan_jobs(run, suite, self.store.bucket):
            try:
                job_id, request = self.launcher.submit(plan)
            except LaunchError as exc:
                logger.exception("job not submitted", run_id=run.run_id, config=plan.config)
                self._fail(run.run_id, plan.config, str(exc))
                continue
            self.runs.record_job(job_id, run.run_id, plan.config, request)
            logger.info("job submitted", run_id=run.run_id, config=plan.config, job_id=job_id)

    def _fail(self, run_id: str, config: str, reason: str) -> None:
        # The fan-in, and the KPI engine with it, is imported only on this rare path, to keep
        # it off the webhook's cold start.
        from distkpi.services.fanin import FanIn

        FanIn(self.runs, self.store, self.statuses, self.count, self.clock).fail_config(
            run_id, config, reason
        )
