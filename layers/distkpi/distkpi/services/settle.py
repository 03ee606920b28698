"""Nodes fan in to their config: a config is settled once, with its KPIs, by whoever gets
there first (the collector on the last manifest, job_events on the job's end, the sweeper
at the deadline), and the finisher is told."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from aws_lambda_powertools import Logger

from distkpi.domain.contracts import RunSpec
from distkpi.domain.kpis.engine import (
    ConfigEvidence,
    ConfigKpis,
    ConfigStatus,
    stored_problems,
)
from distkpi.domain.kpis.runfolder import (
    Reading,
    config_kpis_of,
    gather_config,
    parse_settings,
    read_manifest,
    with_golden,
)
from distkpi.domain.records import ConfigState
from distkpi.domain.signing import ManifestKeys
from distkpi.exceptions import ContractError, NotFoundError, StorageError
from distkpi.services.finish import RunFinisher
from distkpi.services.ports import Counter, Jobs, RunFolders, Runs, no_metrics
from distkpi.services.statuses import StatusPublisher

logger = Logger(child=True)

SETTLED_METRIC = {
    ConfigStatus.OK: "ConfigsCompleted",
    ConfigStatus.FAILED: "ConfigsFailed",
    ConfigStatus.INCOMPLETE: "ConfigsIncomplete",
}
SPECS_KEPT = 64  # the runs a warm container reads manifests of, a few at a time


@dataclass
class ConfigSettler:
    runs: Runs
    jobs: Jobs
    store: RunFolders
    finisher: RunFinisher
    keys: ManifestKeys
    count: Counter = no_metrics
    statuses: StatusPublisher | None = None  # says `in_progress` with check runs
    # a run's spec is written once, when it is created: read once per run, not per event
    _specs: dict[str, RunSpec] = field(default_factory=dict, init=False, repr=False)

    def on_node_manifest(self, run_id: str, config: str, node: int) -> None:
        """A node's manifest landed; NotFoundError when it is no node of a known config. It
        counts only once its signature has verified and it is bound to this run, config and
        node: a stray or copied manifest is logged and not counted, and the node's own,
        which replaces it, counts when it lands."""
        refusal = self._refusal(run_id, config, node)
        if refusal is not None:
            logger.warning("manifest refused; node not counted", run_id=run_id, problem=refusal)
            self.count("ManifestsRefused")
            return
        record = self.runs.add_node(run_id, config, node)
        logger.info(
            "node reported",
            run_id=run_id,
            config=config,
            node=node,
            reported=len(record.nodes_reported),
            expected=record.nodes_expected,
        )
        if record.state is ConfigState.PENDING:
            if len(record.nodes_reported) < record.nodes_expected:
                return
            kpis = self._kpis_from_folder(self._spec(run_id), config, parse_logs=True)
            self._settle(run_id, kpis)
        self.finisher.config_done(run_id, config)

    def _refusal(self, run_id: str, config: str, node: int) -> str | None:
        """Why the manifest now at that node's place is not its node's; None when it is."""
        try:
            self._spec(run_id).config(config)
        except ContractError as exc:
            raise NotFoundError(str(exc)) from exc
        try:
            key = self.keys.for_config(run_id, config)
            read_manifest(self.store.run(run_id), config, node, key, run_id)
        except NotFoundError:
            return f"{config}/node-{node}.json is gone"
        except (ContractError, StorageError) as exc:
            return str(exc)
        return None

    def on_job_failed(self, job_id: str, reason: str) -> bool:
        """A Batch job FAILED: False when the job is not one of ours."""
        job = self.jobs.get(job_id.split("#", maxsplit=1)[0])
        if job is None:
            logger.info("failed job is not ours", job_id=job_id)
            return False
        self.fail_config(job.run_id, job.config, reason)
        return True

    def on_job_succeeded(self, job_id: str) -> bool:
        """A Batch job SUCCEEDED: its nodes have all exited (on Batch the main node waits for
        the others' manifests), so the run folder holds all the config will ever have.
        True when the config is settled from it (now or before): a verified manifest is
        missing (it will never come), or every node's is there but the config is still
        pending (an S3 event lost or late: nothing else would settle it before the run's
        deadline). False when every node reported and the collector settled it, or the job
        is not ours."""
        job = self.jobs.get(job_id)
        if job is None:
            logger.info("succeeded job is not ours", job_id=job_id)
            return False
        spec = self._spec(job.run_id)
        record = self.runs.config(job.run_id, job.config)
        reported = record.nodes_reported if record is not None else frozenset()
        missing = [
            str(n)
            for n in range(spec.config(job.config).nodes)
            if n not in reported and self._refusal(job.run_id, job.config, n) is not None
        ]
        if missing:
            reason = f"job succeeded but node(s) {', '.join(missing)} never reported"
            self._settle_from_evidence(spec, job.config, reason)
        elif record is not None and record.state is ConfigState.PENDING:
            self._settle(job.run_id, self._kpis_from_folder(spec, job.config))
        else:
            return False
        self.finisher.config_done(job.run_id, job.config)
        return True

    def fail_config(
        self, run_id: str, config: str, reason: str, prefix: str = "job failed: "
    ) -> None:
        """A config whose job failed (or never ran): whatever its nodes left, marked failed
        with the reason."""
        kpis = self._kpis_from_folder(self._spec(run_id), config)
        failed = replace(
            kpis,
            status=ConfigStatus.FAILED,
            throughput=None,
            throughput_samples=(),
            problems=(f"{prefix}{reason}", *kpis.problems),
        )
        self._settle(run_id, failed)
        self.finisher.config_done(run_id, config)

    def expire_run(self, run_id: str, reason: str) -> list[str]:
        """Settle a run past its deadline, each config still pending from whatever its nodes
        left; the Batch jobs of those configs."""
        spec = self._spec(run_id)
        jobs = []
        for config in self.runs.configs(run_id):
            if config.state is ConfigState.PENDING:
                self._settle_from_evidence(spec, config.name, reason)
                if config.job_id is not None:
                    jobs.append(config.job_id)
            self.finisher.config_done(run_id, config.name)
        return jobs

    def _spec(self, run_id: str) -> RunSpec:
        spec = self._specs.get(run_id)
        if spec is not None:
            return spec
        run = self.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id}")
        if len(self._specs) >= SPECS_KEPT:
            del self._specs[next(iter(self._specs))]  # the oldest run read
        self._specs[run_id] = run.spec
        return run.spec

    def _settle_from_evidence(self, run: RunSpec, config: str, reason: str) -> None:
        """Settle a config from whatever its nodes left: ok when they all reported after all
        (only an event went missing), else failed or incomplete, with the reason."""
        kpis = self._kpis_from_folder(run, config)
        if kpis.status is not ConfigStatus.OK:
            kpis = replace(kpis, problems=(reason, *kpis.problems))
        self._settle(run.run_id, kpis)

    def _kpis_from_folder(
        self, run: RunSpec, config: str, *, parse_logs: bool = False
    ) -> ConfigKpis:
        """The config's KPIs from whatever its nodes have put in the run folder: from the
        summaries in their signed manifests, and only the collector (``parse_logs``) parses
        a file whose node left none of this engine; a folder that cannot even be listed
        leaves the config without nodes, and says why."""
        spec = run.config(config)
        key = self.keys.for_config(run.run_id, config)
        try:
            reading = Reading(key, parse_logs, run.run_id, settings=parse_settings(run))
            source = self.store.run(run.run_id)
            evidence = with_golden(source, run, gather_config(source, spec, reading))
        except StorageError as exc:
            logger.exception("run folder not readable", run_id=run.run_id, config=config)
            evidence = ConfigEvidence(spec, {}, problems=[f"run folder cannot be read: {exc}"])
        return config_kpis_of(evidence, run)

    def _settle(self, run_id: str, kpis: ConfigKpis) -> None:
        """Store the config's KPIs, once whoever gets there first (its problems bounded)."""
        kpis = replace(kpis, problems=stored_problems(kpis.problems))
        if not self.runs.settle_config(run_id, kpis):
            return
        self.count(SETTLED_METRIC[kpis.status])
        self.count("ParseProblems", len(kpis.problems))
        logger.info(
            "config settled",
            run_id=run_id,
            config=kpis.name,
            status=kpis.status.value,
            throughput=kpis.throughput,
            problems=list(kpis.problems),
        )
