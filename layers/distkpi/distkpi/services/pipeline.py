"""The pipeline's steps, wiring adapters to the pure domain: start runs, fan nodes in to
configs and configs in to runs, publish the verdict. Handlers call these and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_lambda_powertools import Logger

from distkpi.adapters.batch import BatchLauncher
from distkpi.adapters.dynamo import RunRepository, history_key
from distkpi.adapters.github import CommitStatus, GitHubStatusClient
from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.contracts import RunSpec
from distkpi.domain.history import judge_run, rows_from_records, until_commit
from distkpi.domain.judging import Judgement
from distkpi.domain.kpis import ConfigKpis, ConfigStatus, RunKpis, config_kpis, run_kpis
from distkpi.domain.planning import plan_jobs, run_id_for, run_spec_for
from distkpi.domain.runfolder import gather_config
from distkpi.domain.suites import Suite, VerdictSettings
from distkpi.domain.verdict import State, Verdict, decide, describe, pending_description
from distkpi.domain.webhook import Trigger
from distkpi.exceptions import GitHubError, LaunchError, NotFoundError

logger = Logger(child=True)


class Counter(Protocol):
    def __call__(self, name: str, value: int = 1) -> None: ...


def _no_metrics(name: str, value: int = 1) -> None:
    del name, value


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Pipeline:
    runs: RunRepository
    store: S3RunStore
    github: GitHubStatusClient
    launcher: BatchLauncher | None = None
    report_base_url: str | None = None
    count: Counter = _no_metrics
    clock: Callable[[], datetime] = _utcnow

    # -- webhook: start runs -----------------------------------------------------------

    def start_runs(self, trigger: Trigger, delivery: str, suites: Iterable[Suite]) -> list[str]:
        started = []
        for suite in suites:
            run_id = run_id_for(suite.name, trigger.sha, delivery)
            run = run_spec_for(run_id, trigger, suite)
            record = {
                **_trigger_fields(trigger),
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
            self._post(run, State.PENDING, pending_description(len(run.configs), gpus))
            logger.info("run started", run_id=run_id, sha=trigger.sha, model=suite.name)
        return started

    def _submit(self, run: RunSpec, suite: Suite) -> None:
        if self.launcher is None:
            raise LaunchError("no Batch launcher configured")
        for plan in plan_jobs(run, suite, self.store.bucket):
            try:
                job_id, request = self.launcher.submit(plan)
            except LaunchError as exc:
                logger.exception("job not submitted", run_id=run.run_id, config=plan.config)
                self.fail_config(run.run_id, plan.config, str(exc))
                continue
            self.runs.record_job(job_id, run.run_id, plan.config, request)
            logger.info("job submitted", run_id=run.run_id, config=plan.config, job_id=job_id)

    # -- collector: nodes -> config -> run ---------------------------------------------

    def on_node_manifest(self, run_id: str, config: str, node: int) -> None:
        reported, expected, state = self.runs.add_node(run_id, config, node)
        logger.info(
            "node reported",
            run_id=run_id,
            config=config,
            node=node,
            reported=reported,
            expected=expected,
        )
        if state == "pending" and reported < expected:
            return
        if state == "pending":
            run = self._run_spec(run_id)
            evidence = gather_config(self.store.run(run_id), run.config(config))
            kpis = config_kpis(evidence, run.target_accuracy, run.accuracy_pass)
            if self.runs.settle_config(run_id, config, kpis.to_record(), kpis.status.value):
                self.count("ConfigsCompleted")
                self.count("ParseProblems", len(kpis.problems))
                logger.info(
                    "config complete",
                    run_id=run_id,
                    config=config,
                    status=kpis.status.value,
                    throughput=kpis.throughput,
                )
        self._config_done(run_id, config)

    def on_job_failed(self, job_id: str, reason: str) -> bool:
        """A Batch job FAILED: False when the job is not one of ours."""
        target = self.runs.job_target(job_id.split("#", maxsplit=1)[0])
        if target is None:
            logger.info("failed job is not ours", job_id=job_id)
            return False
        self.fail_config(*target, reason)
        return True

    def fail_config(self, run_id: str, config: str, reason: str) -> None:
        """A config whose job failed: whatever its nodes left, marked failed with the reason."""
        run = self._run_spec(run_id)
        evidence = gather_config(self.store.run(run_id), run.config(config))
        kpis = config_kpis(evidence, run.target_accuracy, run.accuracy_pass)
        failed = replace(
            kpis,
            status=ConfigStatus.FAILED,
            throughput=None,
            throughput_samples=(),
            problems=(f"job failed: {reason}", *kpis.problems),
        )
        if self.runs.settle_config(run_id, config, failed.to_record(), "failed"):
            self.count("ConfigsFailed")
            logger.info("config failed", run_id=run_id, config=config, reason=reason)
        self._config_done(run_id, config)

    def _config_done(self, run_id: str, config: str) -> None:
        done, total = self.runs.add_config_done(run_id, config)
        if done >= total:
            self._finish(run_id)

    def _run_spec(self, run_id: str) -> RunSpec:
        item = self.runs.get_run(run_id)
        if item is None:
            raise NotFoundError(f"no run {run_id}")
        return RunSpec.model_validate(item["spec"])

    def _finish(self, run_id: str) -> None:
        item = self.runs.get_run(run_id)
        if item is None:
            raise NotFoundError(f"no run {run_id}")
        run = RunSpec.model_validate(item["spec"])
        configs = {
            c["name"]: ConfigKpis.from_record(c["kpis"])
            for c in self.runs.configs(run_id)
            if "kpis" in c
        }
        result = run_kpis(run, configs)
        judgements = self._judge(item, result)
        verdict = decide(result, run.accuracy_tolerance, judgements)
        description = describe(result, verdict, judgements)
        payload = {
            "kpis": result.to_json(),
            "judgements": [{**j.to_json(), "why": j.why} for j in judgements],
            "state": verdict.state.value,
            "reasons": list(verdict.reasons),
            "description": description,
        }
        if self.runs.finish_run(run_id, payload, self.clock().isoformat(timespec="seconds")):
            logger.info("run finished", run_id=run_id, state=verdict.state.value)
        self._publish(item, result, verdict, description)

    def _judge(self, item: dict[str, Any], result: RunKpis) -> list[Judgement]:
        """Every KPI against its baseline: for a pull request the base branch's history up
        to the merge base (else its latest runs), for a push the branch's earlier runs."""
        settings = VerdictSettings.model_validate(item.get("verdict_settings") or {})
        branch = item["base_branch"] if item["event"] == "pull_request" else item["branch"]
        limit = len(result.configs) * 4 * settings.window
        records = self.runs.history(item["repo"], branch, item["model"], limit=limit)
        rows = [r for r in rows_from_records(records) if r.run_id != item["run_id"]]
        if item["event"] == "pull_request":
            rows = until_commit(rows, item.get("base_sha"))
        resets: dict[str, str] = {}
        for reset in self.runs.resets(item["repo"], branch, item["model"]):
            resets[reset["config"]] = max(resets.get(reset["config"], ""), reset["at"])
        return judge_run(result, rows, settings.judge_settings(), resets)

    def _publish(
        self, item: dict[str, Any], result: RunKpis, verdict: Verdict, description: str
    ) -> None:
        """History, kpis.json and the final status, by one holder of the publication lease.

        A publisher that dies leaves its lease to expire; the next delivery redoes all of it
        (every write here is idempotent).
        """
        run = RunSpec.model_validate(item["spec"])
        now = int(self.clock().timestamp())
        if not self.runs.claim_publication(run.run_id, now):
            return
        finished_at = self.clock().isoformat(timespec="seconds")
        self.runs.put_history(_history_items(item, result, finished_at))
        self.store.put_json(f"runs/{run.run_id}/kpis.json", result.to_json())
        if self._post(run, verdict.state, description):
            self.runs.mark_published(run.run_id, now)
        else:
            self.runs.release_publication(run.run_id)

    def _post(self, run: RunSpec, state: State, description: str) -> bool:
        status = CommitStatus(
            repo=run.repo,
            sha=run.sha,
            state=state.value,
            context=f"distkpi/{run.model}",
            description=description,
            target_url=self.report_url(run.run_id),
        )
        try:
            self.github.post(status)
        except GitHubError:
            logger.exception("status not posted", run_id=run.run_id, state=state.value)
            self.count("StatusPostFailures")
            return False
        self.count("StatusesPosted")
        logger.info("status posted", run_id=run.run_id, state=state.value)
        return True

    def report_url(self, run_id: str) -> str | None:
        if self.report_base_url:
            return f"{self.report_base_url.rstrip('/')}/reports/{run_id}/"
        return None


def _trigger_fields(trigger: Trigger) -> dict[str, Any]:
    return {
        "repo": trigger.repo,
        "sha": trigger.sha,
        "ref": trigger.ref,
        "branch": trigger.branch,
        "event": trigger.event,
        "base_branch": trigger.base_branch,
        "base_sha": trigger.base_sha,
        "pull_request": trigger.pull_request,
    }


def _history_items(
    run_item: dict[str, Any], result: RunKpis, finished_at: str
) -> list[dict[str, Any]]:
    """One record per config; keyed by the run's creation time so rewriting is harmless."""
    return [
        {
            "PK": history_key(run_item["repo"], run_item["branch"], run_item["model"]),
            "SK": f"{run_item['created_at']}#{result.run_id}#{c.name}",
            "repo": run_item["repo"],
            "branch": run_item["branch"],
            "model": run_item["model"],
            "config": c.name,
            "sha": run_item["sha"],
            "run_id": result.run_id,
            "created_at": run_item["created_at"],
            "finished_at": finished_at,
            "kpis": c.to_record(),
        }
        for c in result.configs
    ]
