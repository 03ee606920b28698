"""The runs a finished run asks for: a confirmation of the configs its verdict left in doubt,
a bisection's steps (started and cancelled), and a diagnosis job of its regressed configs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from distkpi.domain.commit_status import confirming_description
from distkpi.domain.planning.diagnosis import diagnosed_configs, diagnosis_base
from distkpi.domain.planning.jobs import (
    confirmation_run_id,
    confirmation_spec,
    diagnosis_run_id,
    diagnosis_spec,
    run_spec_for,
)
from distkpi.domain.planning.suites import DiagnoseWhen, Suite
from distkpi.domain.records import RunRecord
from distkpi.services.ports import Counter, SuiteSource, no_metrics
from distkpi.services.run_launcher import RunLauncher

if TYPE_CHECKING:
    from distkpi.domain.judging.statistics import Judgement

logger = Logger(child=True)


@dataclass
class FollowUps:
    catalog: SuiteSource
    launcher: RunLauncher
    count: Counter = no_metrics

    def confirm(self, run: RunRecord, configs: Sequence[str]) -> str | None:
        """Run ``configs`` of ``run``'s commit once more, as the next run confirming the
        first; its id, or None when the suite is gone (the verdict then stands as it is)."""
        first = run.first_run_id
        attempt = run.attempt + 1
        suite = self._suite(run.model)
        confirm = run.verdict_settings.confirm
        if suite is None or confirm is None:
            logger.warning("suite gone; not confirmed", run_id=run.run_id, model=run.model)
            return None
        run_id = confirmation_run_id(first, attempt)
        spec = confirmation_spec(run.spec, run_id, configs)
        record = RunRecord(
            run_id=run_id,
            trigger=run.trigger,
            model=run.model,
            spec=spec,
            delivery=run.delivery,
            verdict_settings=run.verdict_settings,
            created_at=self.launcher.now(),
            configs_total=len(spec.configs),
            attempt=attempt,
            confirms=first,
        )
        description = confirming_description(configs, attempt, confirm.max_runs)
        if self.launcher.launch(record, suite, description):
            self.count("ConfirmationRuns")
        return run_id

    def start_step(
        self, bad: RunRecord, run_id: str, sha: str, configs: Sequence[str], good: str
    ) -> bool:
        """A bisection's step: ``configs`` of ``bad``'s run at commit ``sha`` (a paired suite's
        as an A/B of the good commit against it), linked to ``bad``; no status is posted (the
        commit was never asked about). Whether the step's run exists now (another finisher
        may have started it); False when the suite is gone."""
        suite = self._suite(bad.model)
        if suite is None:
            logger.warning("suite gone; no bisection step", run_id=bad.run_id, model=bad.model)
            return False
        trigger = replace(bad.trigger, sha=sha, before=None)
        spec = confirmation_spec(
            run_spec_for(run_id, trigger, suite, good if suite.verdict.paired else None),
            run_id,
            configs,
        )
        record = self.launcher.record(run_id, trigger, suite, spec, bad.delivery)
        if self.launcher.launch(replace(record, bisection=bad.run_id), suite, None):
            self.count("BisectionRuns")
        return True

    def diagnose(self, run: RunRecord, judgements: Sequence[Judgement]) -> str | None:
        """The diagnosis job of a finished run: per config its suite's `diagnose:` names (a
        regressed timing KPI, by default), the base commit then the head, profiled, on one
        allocation as a paired run's pair; untimed, never judged, in no history, posting no
        status. Its run id, or None when there is nothing to diagnose (no such config, no
        base, an unchanged head) or the suite is gone."""
        suite = self._suite(run.model)
        if suite is None:
            return None
        configs = diagnosed_configs(suite.diagnose, run.spec, judgements)
        base = diagnosis_base(run.spec, run.trigger)
        if not configs or base is None:
            return None
        if suite.why_not_paired() is not None:
            logger.info("not diagnosed", run_id=run.run_id, why=suite.why_not_paired())
            return None
        run_id = diagnosis_run_id(run.run_id)
        spec = diagnosis_spec(run.spec, run_id, configs, base, suite.diagnose.steps)
        record = self.launcher.record(run_id, run.trigger, suite, spec, run.delivery)
        if self.launcher.launch(record, suite, None):
            self.count("DiagnosisRuns")
            logger.info("diagnosis started", run_id=run_id, of_run=run.run_id, configs=configs)
        return run_id

    def diagnose_culprit(
        self, bad: RunRecord, culprit: str, parent: str, configs: Sequence[str]
    ) -> str | None:
        """The diagnosis job of a bisection's culprit: ``configs`` of the bad run at the
        culprit against its parent, stored with the bad run (where it stands over the
        push's own diagnosis). Its run id, or None when the suite never diagnoses, cannot
        check out two commits, or is gone."""
        suite = self._suite(bad.model)
        if suite is None or suite.diagnose.on is DiagnoseWhen.NEVER or not configs:
            return None
        if suite.why_not_paired() is not None or culprit == parent:
            return None
        run_id = diagnosis_run_id(bad.run_id, culprit=True)
        spec = diagnosis_spec(
            bad.spec, run_id, configs, parent, suite.diagnose.steps, culprit=culprit
        )
        trigger = replace(bad.trigger, sha=culprit, before=parent)
        record = self.launcher.record(run_id, trigger, suite, spec, bad.delivery)
        if self.launcher.launch(record, suite, None):
            self.count("DiagnosisRuns")
            logger.info("culprit diagnosis started", run_id=run_id, culprit=culprit)
        return run_id

    def cancel_step(self, run_id: str, reason: str) -> bool:
        """Cancel a bisection's step run and stop its jobs (it posted no status)."""
        if not self.launcher.mark_cancelled(run_id, reason):
            return False
        self.launcher.stop_pending(run_id, reason)
        logger.info("bisection step cancelled", run_id=run_id, reason=reason)
        return True

    def _suite(self, name: str) -> Suite | None:
        suites, _ = self.catalog.suites()
        return next((s for s in suites if s.name == name), None)
