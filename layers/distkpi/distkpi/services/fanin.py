"""The collector's and job_events' side: nodes fan in to configs, configs to runs, and each
run's verdict against its history is published once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aws_lambda_powertools import Logger

from distkpi.adapters.dynamo import RunRepository, history_key
from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.commit_status import State
from distkpi.domain.contracts import RunSpec
from distkpi.domain.history import (
    HistoryRow,
    history_branch,
    judge_run,
    rows_from_records,
    until_commit,
)
from distkpi.domain.judging import Judgement
from distkpi.domain.kpis import (
    ConfigEvidence,
    ConfigKpis,
    ConfigStatus,
    RunKpis,
    config_kpis,
    run_kpis,
)
from distkpi.domain.runfolder import gather_config, node_indices
from distkpi.domain.suites import VerdictSettings
from distkpi.domain.verdict import Verdict, decide, describe
from distkpi.exceptions import NotFoundError, StorageError
from distkpi.services.statuses import Clock, Counter, StatusPublisher, no_metrics, utcnow

logger = Logger(child=True)

SETTLED_METRIC = {
    ConfigStatus.OK: "ConfigsCompleted",
    ConfigStatus.FAILED: "ConfigsFailed",
    ConfigStatus.INCOMPLETE: "ConfigsIncomplete",
}


@dataclass
class FanIn:
    runs: RunRepository
    store: S3RunStore
    statuses: StatusPublisher
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

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
            self._settle(run_id, config, self._kpis_from_folder(run_id, config))
        self._config_done(run_id, config)

    def on_job_failed(self, job_id: str, reason: str) -> bool:
        """A Batch job FAILED: False when the job is not one of ours."""
        target = self.runs.job_target(job_id.split("#", maxsplit=1)[0])
        if target is None:
            logger.info("failed job is not ours", job_id=job_id)
            return False
        self.fail_config(*target, reason)
        return True

    def on_job_succeeded(self, job_id: str) -> bool:
        """A Batch job SUCCEEDED: its nodes have all exited (on Batch the main node waits for
        the others' manifests), so a manifest missing now will never come. True when one
        was missing and the config is settled from what the others left; False when every
        node reported (the collector's part) or the job is not ours."""
        target = self.runs.job_target(job_id)
        if target is None:
            logger.info("succeeded job is not ours", job_id=job_id)
            return False
        run_id, config = target
        expected = self._run_spec(run_id).config(config).nodes
        reported = set(node_indices(self.store.run(run_id), config))
        missing = [str(n) for n in range(expected) if n not in reported]
        if not missing:
            return False
        reason = f"job succeeded but node(s) {', '.join(missing)} never reported"
        self._settle_from_evidence(run_id, config, reason)
        self._config_done(run_id, config)
        return True

    def fail_config(self, run_id: str, config: str, reason: str) -> None:
        """A config whose job failed: whatever its nodes left, marked failed with the reason."""
        kpis = self._kpis_from_folder(run_id, config)
        failed = replace(
            kpis,
            status=ConfigStatus.FAILED,
            throughput=None,
            throughput_samples=(),
            problems=(f"job failed: {reason}", *kpis.problems),
        )
        self._settle(run_id, config, failed)
        self._config_done(run_id, config)

    def expire_run(self, run_id: str, reason: str) -> list[str]:
        """Settle a run past its deadline, each config still pending from whatever its nodes
        left; the Batch jobs of those configs."""
        jobs = []
        for item in self.runs.configs(run_id):
            config = str(item["name"])
            if item["state"] == "pending":
                self._settle_from_evidence(run_id, config, reason)
                if "job_id" in item:
                    jobs.append(str(item["job_id"]))
            self._config_done(run_id, config)
        return jobs

    def _settle_from_evidence(self, run_id: str, config: str, reason: str) -> None:
        """Settle a config from whatever its nodes left: ok when they all reported after all
        (only an event went missing), else failed or incomplete, with the reason."""
        kpis = self._kpis_from_folder(run_id, config)
        if kpis.status is not ConfigStatus.OK:
            kpis = replace(kpis, problems=(reason, *kpis.problems))
        self._settle(run_id, config, kpis)

    def _kpis_from_folder(self, run_id: str, config: str) -> ConfigKpis:
        """The config's KPIs from whatever its nodes have put in the run folder; a folder
        that cannot even be listed leaves the config without nodes, and says why."""
        run = self._run_spec(run_id)
        spec = run.config(config)
        try:
            evidence = gather_config(self.store.run(run_id), spec)
        except StorageError as exc:
            logger.exception("run folder not readable", run_id=run_id, config=config)
            evidence = ConfigEvidence(spec, {}, problems=[f"run folder cannot be read: {exc}"])
        return config_kpis(evidence, run.target_accuracy, run.accuracy_pass)

    def _settle(self, run_id: str, config: str, kpis: ConfigKpis) -> None:
        """Store the config's KPIs, once whoever gets there first."""
        if not self.runs.settle_config(run_id, config, kpis.to_record(), kpis.status.value):
            return
        self.count(SETTLED_METRIC[kpis.status])
        self.count("ParseProblems", len(kpis.problems))
        logger.info(
            "config settled",
            run_id=run_id,
            config=config,
            status=kpis.status.value,
            throughput=kpis.throughput,
            problems=list(kpis.problems),
        )

    def _config_done(self, run_id: str, config: str) -> None:
        done, total = self.runs.add_config_done(run_id, config)
        if done >= total:
            self._finish(run_id)

    def _run_item(self, run_id: str) -> dict[str, Any]:
        item = self.runs.get_run(run_id)
        if item is None:
            raise NotFoundError(f"no run {run_id}")
        return item

    def _run_spec(self, run_id: str) -> RunSpec:
        return RunSpec.model_validate(self._run_item(run_id)["spec"])

    def _finish(self, run_id: str) -> None:
        item = self._run_item(run_id)
        run = RunSpec.model_validate(item["spec"])
        configs = {
            c["name"]: ConfigKpis.from_record(c["kpis"])
            for c in self.runs.configs(run_id)
            if "kpis" in c
        }
        result = run_kpis(run, configs)
        judgements, rows = self._judge(item, result)
        verdict = decide(result, run.accuracy_tolerance, judgements)
        description = describe(result, verdict, judgements)
        payload = {
            "kpis": result.to_json(),
            "judgements": [{**j.to_json(), "why": j.why} for j in judgements],
            "state": verdict.state.value,
            "reasons": list(verdict.reasons),
            "description": description,
        }
        finished_at = self.clock().isoformat(timespec="seconds")
        if self.runs.finish_run(run_id, payload, finished_at):
            logger.info("run finished", run_id=run_id, state=verdict.state.value)
        report = Report(
            {**item, "result": payload, "finished_at": finished_at}, result, judgements, rows
        )
        self._publish(item, result, verdict, description, report)

    def _judge(
        self, item: dict[str, Any], result: RunKpis
    ) -> tuple[list[Judgement], list[HistoryRow]]:
        settings = verdict_settings(item)
        rows, resets = baseline_rows(self.runs, item, settings.window, len(result.configs))
        return judge_run(result, rows, settings.judge_settings(), resets), rows

    def _write_report(self, report: Report) -> bool:
        """reports/<run_id>/: a report that cannot be drawn is logged and counted, and the
        status still goes out, without the link."""
        from distkpi.reporting.page import build_report  # matplotlib: only when a run ends

        try:
            files = build_report(report.item, report.result, report.judgements, report.history)
        except Exception:
            logger.exception("report not written", run_id=report.result.run_id)
            self.count("ReportFailures")
            return False
        for name, data in files.items():
            kind = "text/html; charset=utf-8" if name.endswith(".html") else "image/png"
            self.store.put_bytes(f"reports/{report.result.run_id}/{name}", data, kind)
        return True

    def _publish(
        self,
        item: dict[str, Any],
        result: RunKpis,
        verdict: Verdict,
        description: str,
        report: Report,
    ) -> bool:
        """History, kpis.json, the report and the final status, by one holder of the
        publication lease.

        A publisher that dies leaves its lease to expire; the next delivery redoes all of it
        (every write here is idempotent).
        """
        run = RunSpec.model_validate(item["spec"])
        now = int(self.clock().timestamp())
        if not self.runs.claim_publication(run.run_id, now):
            return False
        self.runs.put_history(_history_items(report.item, result))
        self.store.put_json(f"runs/{run.run_id}/kpis.json", result.to_json())
        written = self._write_report(report)
        if self.statuses.post(run, verdict.state, description, report=written):
            self.runs.mark_published(run.run_id, now)
            return True
        self.runs.release_publication(run.run_id)
        return False

    def republish_unpublished(self) -> int:
        """Publish the runs that finished while GitHub was down; how many went out now."""
        posted = 0
        for key in self.runs.unpublished_runs():
            run_id = str(key["PK"]).removeprefix("RUN#")
            try:
                posted += self._republish(run_id)
            except Exception:  # one broken run must not keep the others' statuses back
                logger.exception("status not republished", run_id=run_id)
                self.count("SweepFailures")
        return posted

    def _republish(self, run_id: str) -> bool:
        item = self.runs.get_run(run_id)
        if item is None or "result" not in item:
            return False
        stored = item["result"]
        report = stored_report(self.runs, item)
        verdict = Verdict(State(stored["state"]), tuple(stored.get("reasons", ())))
        if not self._publish(item, report.result, verdict, stored["description"], report):
            return False
        logger.info("status republished", run_id=run_id)
        return True


@dataclass(frozen=True)
class Report:
    item: dict[str, Any]
    result: RunKpis
    judgements: list[Judgement]
    history: list[HistoryRow]


def verdict_settings(item: Mapping[str, Any]) -> VerdictSettings:
    """The suite's `verdict:` settings the run was started with."""
    return VerdictSettings.model_validate(item.get("verdict_settings") or {})


def stored_report(runs: RunRepository, item: Mapping[str, Any]) -> Report:
    """The report of a finished run, from what its item stored and the history it was
    judged against."""
    stored = item["result"]
    result = RunKpis.from_json(stored["kpis"])
    judgements = [Judgement.from_json(j) for j in stored.get("judgements", [])]
    rows, _ = baseline_rows(runs, item, verdict_settings(item).window, len(result.configs))
    return Report(dict(item), result, judgements, rows)


def baseline_rows(
    runs: RunRepository, item: Mapping[str, Any], window: int, configs: int
) -> tuple[list[HistoryRow], dict[str, str]]:
    """The history a run is judged against, and the latest audited reset per config: for a
    pull request the base branch's runs up to the merge base (else its latest runs), for a
    push the branch's own earlier runs. Reads ``window`` runs of each of ``configs``
    configs, four times over, so that runs set aside (failed, older than the merge base or
    a reset) still leave a full window."""
    branch = item["base_branch"] if item["event"] == "pull_request" else item["branch"]
    records = runs.history(item["repo"], branch, item["model"], limit=4 * window * configs)
    rows = [r for r in rows_from_records(records) if r.run_id != item["run_id"]]
    if item["event"] == "pull_request":
        rows = until_commit(rows, item.get("base_sha"))
    resets: dict[str, str] = {}
    for reset in runs.resets(item["repo"], branch, item["model"]):
        resets[reset["config"]] = max(resets.get(reset["config"], ""), reset["at"])
    return rows, resets


def _history_items(run_item: Mapping[str, Any], result: RunKpis) -> list[dict[str, Any]]:
    """One record per config, finished when the run did; keyed by the run's creation time so
    rewriting is harmless."""
    branch = history_branch(run_item["event"], run_item["branch"], run_item.get("pull_request"))
    return [
        {
            "PK": history_key(run_item["repo"], branch, run_item["model"]),
            "SK": f"{run_item['created_at']}#{result.run_id}#{c.name}",
            "repo": run_item["repo"],
            "branch": branch,
            "model": run_item["model"],
            "config": c.name,
            "sha": run_item["sha"],
            "run_id": result.run_id,
            "created_at": run_item["created_at"],
            "finished_at": run_item["finished_at"],
            "kpis": c.to_record(),
        }
        for c in result.configs
    ]
