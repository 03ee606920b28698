"""Configs fan in to their run: when the last one settles, the run is evaluated against its
baseline and the evaluation stored once; then it is published."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from aws_lambda_powertools import Logger

from distkpi.adapters.dynamo import HistoryRepository, RunRepository
from distkpi.domain.evaluation import Evaluation, evaluate
from distkpi.domain.kpis import run_kpis
from distkpi.domain.records import RunRecord, RunStatus
from distkpi.exceptions import NotFoundError
from distkpi.services.baseline import Baseline, baseline_of
from distkpi.services.ports import Clock, utcnow
from distkpi.services.publish import Publisher

logger = Logger(child=True)


@dataclass
class RunFinisher:
    runs: RunRepository
    history: HistoryRepository
    publisher: Publisher
    clock: Clock = field(default=utcnow)

    def config_done(self, run_id: str, config: str) -> None:
        done, total = self.runs.add_config_done(run_id, config)
        if done >= total:
            self.finish(run_id)

    def finish(self, run_id: str) -> None:
        """Evaluate and store the run once; publish what was stored (whoever stored it)."""
        run = self._run(run_id)
        baseline = None
        if run.evaluation is None:
            baseline = baseline_of(self.history, run)
            evaluation = self._evaluate(run, baseline)
            finished_at = self.clock().isoformat(timespec="seconds")
            if self.runs.finish(run_id, evaluation, finished_at):
                logger.info("run finished", run_id=run_id, state=evaluation.verdict.state.value)
                run = replace(
                    run, status=RunStatus.DONE, evaluation=evaluation, finished_at=finished_at
                )
            else:  # another finisher stored its evaluation first, or the run was cancelled
                run = self._run(run_id)
        if run.evaluation is not None:  # a cancelled run has none and publishes nothing
            self.publisher.publish(run, baseline.rows if baseline else None)

    def _run(self, run_id: str) -> RunRecord:
        run = self.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id}")
        return run

    def _evaluate(self, run: RunRecord, baseline: Baseline) -> Evaluation:
        configs = {c.name: c.kpis for c in self.runs.configs(run.run_id) if c.kpis is not None}
        kpis = run_kpis(run.spec, configs)
        return evaluate(
            kpis,
            baseline.rows,
            run.verdict_settings,
            run.spec.accuracy_tolerance,
            baseline.resets,
        )
