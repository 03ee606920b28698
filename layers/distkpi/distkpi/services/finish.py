"""Configs fan in to their run: when the last one settles, the commit's runs are evaluated
against their baseline. Configs in doubt are re-run first when the suite confirms (the
evaluation so far is stored on the run, which hands over to the next); otherwise the
evaluation is stored once and published."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from aws_lambda_powertools import Logger

from distkpi.domain.judging.evaluation import Evaluation, evaluate, unjudged
from distkpi.domain.judging.paired import evaluate_paired
from distkpi.domain.kpis.combining import combine
from distkpi.domain.kpis.engine import run_kpis
from distkpi.domain.planning.jobs import confirmation_run_id
from distkpi.domain.purpose import policy_of
from distkpi.domain.records import RunRecord, RunStatus
from distkpi.exceptions import NotFoundError
from distkpi.services.baseline import Baseline, baseline_of
from distkpi.services.ports import Clock, History, Runs, utcnow
from distkpi.services.publish import Publisher

logger = Logger(child=True)


@dataclass
class RunFinisher:
    runs: Runs
    history: History
    publisher: Publisher
    clock: Clock = field(default=utcnow)
    # starts the next run of a commit for the configs in doubt (RunStarter.confirm); None
    # where no jobs can be submitted: the verdict is then final at the first look
    confirm: Callable[[RunRecord, Sequence[str]], str | None] | None = None

    def config_done(self, run_id: str, config: str) -> None:
        done, total = self.runs.add_config_done(run_id, config)
        if done >= total:
            self.finish(run_id)

    def finish(self, run_id: str) -> None:
        """Evaluate and store the run once (or hand it over to a confirmation run); publish
        what was stored (whoever stored it)."""
        run = self._run(run_id)
        baseline = None
        if run.evaluation is None:
            judged = policy_of(run).judged
            baseline = baseline_of(self.history, run) if judged else Baseline([], {})
            evaluation = self._evaluate(run, baseline)
            if evaluation.in_doubt and self.confirm is not None and policy_of(run).confirms:
                self._hand_over(run, evaluation)
                return
            finished_at = self.clock().isoformat(timespec="seconds")
            if self.runs.finish(run_id, evaluation, finished_at):
                logger.info("run finished", run_id=run_id, state=evaluation.verdict.state.value)
                run = replace(
                    run, status=RunStatus.DONE, evaluation=evaluation, finished_at=finished_at
                )
            else:  # another finisher stored its evaluation first, or the run was cancelled
                run = self._run(run_id)
        if run.status is RunStatus.DONE and run.evaluation is not None:
            self.publisher.publish(run, baseline.rows if baseline else None)

    def _hand_over(self, run: RunRecord, evaluation: Evaluation) -> None:
        """Start the next run for the configs in doubt (its id is fixed, so a second
        finisher starts nothing new), then leave the verdict to it."""
        assert self.confirm is not None
        next_run = self.confirm(run, evaluation.in_doubt)
        if next_run is None:  # nothing to confirm with: this look's verdict is final
            evaluation = replace(evaluation, in_doubt=())
            finished_at = self.clock().isoformat(timespec="seconds")
            if self.runs.finish(run.run_id, evaluation, finished_at):
                stored = replace(
                    run, status=RunStatus.DONE, evaluation=evaluation, finished_at=finished_at
                )
                self.publisher.publish(stored)
            return
        if self.runs.hand_over(run.run_id, evaluation, next_run):
            logger.info(
                "run confirming", run_id=run.run_id, next_run=next_run, configs=evaluation.in_doubt
            )
            return
        current = self._run(run.run_id)
        if current.status is RunStatus.CANCELLED:  # superseded while its next run started
            at = self.clock().isoformat(timespec="seconds")
            self.runs.cancel(next_run, current.cancelled_reason or "cancelled", at)

    def _run(self, run_id: str) -> RunRecord:
        run = self.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id}")
        return run

    def _evaluate(self, run: RunRecord, baseline: Baseline) -> Evaluation:
        """This run with the runs of its commit before it (a confirmation's), judged together
        at this look; the first run's spec names every config and the base. A paired run is
        judged by its pairs against the paired history, replaying its looks. A run whose
        purpose is not judged (a diagnosis job's) keeps its KPIs without a verdict."""
        if not policy_of(run).judged:
            configs = {c.name: c.kpis for c in self.runs.configs(run.run_id) if c.kpis is not None}
            return unjudged(run_kpis(run.spec, configs), "profiled, not judged")
        if run.spec.paired is not None:
            configs = {c.name: c.kpis for c in self.runs.configs(run.run_id) if c.kpis is not None}
            return evaluate_paired(
                run_kpis(run.spec, configs),
                baseline.rows,
                run.verdict_settings,
                run.spec.accuracy_tolerance,
                baseline.resets,
            )
        first = self._run(run.first_run_id) if run.confirms else run
        chain = [first] + [
            self._run(confirmation_run_id(first.run_id, attempt))
            for attempt in range(2, run.attempt + 1)
        ]
        runs = [
            {c.name: c.kpis for c in self.runs.configs(r.run_id) if c.kpis is not None}
            for r in chain
        ]
        spec = first.spec.model_copy(update={"run_id": run.run_id})
        return evaluate(
            combine(spec, runs),
            baseline.rows,
            run.verdict_settings,
            run.spec.accuracy_tolerance,
            baseline.resets,
            look=run.attempt,
        )
