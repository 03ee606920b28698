"""Bisecting a branch's regression: a push that fails with regressions, over more than one
commit on the first-parent line since the branch's last passing commit, starts a bisection
(domain/bisect); each step is a linked run of the regressed configs at the midpoint, in no
history and posting no status; each step's run, once finished, takes its side and the next
step starts, until the culprit is found or the bisection is inconclusive."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from distkpi.domain.bisect.deciding import Ends, Side, step_side
from distkpi.domain.bisect.ends import regression_ends, step_values
from distkpi.domain.bisect.line import NoLine
from distkpi.domain.bisect.plan import (
    Bisection,
    BisectState,
    Ended,
    RunAt,
    Step,
    default_max_runs,
    narrowed,
    next_move,
)
from distkpi.domain.commit_status import State
from distkpi.domain.github.alerts import regressed_configs
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.statistics import SCALING
from distkpi.domain.planning.suites import Suite
from distkpi.domain.purpose import policy_of
from distkpi.domain.records import RunRecord
from distkpi.services.alerts import RegressionAlerts
from distkpi.services.baseline import baseline_of
from distkpi.services.ports import (
    Alarms,
    Bisections,
    Clock,
    Counter,
    History,
    Runs,
    SuiteSource,
    no_metrics,
    utcnow,
)
from distkpi.services.statuses import StatusPublisher

if TYPE_CHECKING:
    from distkpi.services.site import SitePublisher

logger = Logger(child=True)

# RunStarter.start_step(bad run, step run id, sha, configs, good) and cancel_step(run, why)
StartStep = Callable[[RunRecord, str, str, Sequence[str], str], bool]
CancelStep = Callable[[str, str], bool]
# RunStarter.diagnose_culprit(bad run, culprit, its parent, configs)
DiagnoseCulprit = Callable[[RunRecord, str, str, Sequence[str]], str | None]


@dataclass
class Bisector:
    runs: Runs
    bisections: Bisections
    alarms: Alarms
    history: History
    statuses: StatusPublisher
    catalog: SuiteSource
    start_step: StartStep
    cancel_step: CancelStep
    # told of each bisection that ended, as of its regression (None: no topic)
    alerts: RegressionAlerts | None = None
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)
    # starts the culprit's diagnosis job against its parent (None: no diagnosis)
    diagnose_culprit: DiagnoseCulprit | None = None
    site: SitePublisher | None = None  # the history site's culprit marks

    def after_push(self, run: RunRecord) -> Bisection | None:
        """Start the bisection of a push's regression, once (a republished run finds it
        stored); None when the run calls for none. Read after the alarm state was kept,
        which still holds the branch's last passing commit."""
        wanted = self._wanted(run)
        if wanted is None:
            return None
        suite, configs, good = wanted
        trigger, bad_id = run.trigger, run.first_run_id
        found = self.bisections.get(trigger.repo, trigger.branch, run.model, bad_id)
        if found is not None:
            return found
        line = self.statuses.first_parent_line(trigger.repo, good, trigger.sha)
        if isinstance(line, NoLine):
            logger.warning("no bisection: no first-parent line", run_id=run.run_id, why=str(line))
            self.count("BisectionsNotStarted")
            return None
        if len(line) < 2:  # the pushed head alone: it is the culprit, nothing to search
            return None
        assert run.evaluation is not None
        ends = tuple(self._ends(run, good, configs))
        base = run.evaluation.kpis.base_config
        scaling = any(e.kpi in SCALING for e in ends) and base not in configs
        bisection = Bisection(
            repo=trigger.repo,
            branch=trigger.branch,
            model=run.model,
            bad_run_id=bad_id,
            good=good,
            bad=trigger.sha,
            configs=configs,
            line=line,
            ends=ends,
            max_runs=suite.bisect.max_runs or default_max_runs(len(line)),
            created_at=self._now(),
            paired=suite.verdict.paired is not None,
            step_configs=(*configs, base) if scaling and base else (),
        )
        if not self.bisections.create(bisection):
            return self.bisections.get(trigger.repo, trigger.branch, run.model, bad_id)
        self.count("BisectionsStarted")
        logger.info("bisection started", run_id=bad_id, commits=len(line), configs=configs)
        self._cancel_older(bisection)
        return self._move_on(bisection, run)

    def _wanted(self, run: RunRecord) -> tuple[Suite, tuple[str, ...], str] | None:
        """(its suite, the regressed configs, the good commit) when the run calls for a
        bisection: a push's (or the schedule's), not a step's, that failed with regressions,
        of a suite that bisects, on a branch with a passing commit before it."""
        evaluation, trigger = run.evaluation, run.trigger
        if evaluation is None or not trigger.of_branch or not policy_of(run).bisects:
            return None
        configs = tuple(sorted(regressed_configs(evaluation)))
        suite = self._suite(run.model) if configs else None
        if suite is None or not suite.bisect.enabled:
            return None
        good = self.alarms.get(trigger.repo, trigger.branch, run.model).last_pass_sha
        if good is None or good == trigger.sha:
            return None
        return suite, configs, good

    def step_finished(self, run: RunRecord) -> Bisection | None:
        """Judge a finished step's side and start the next step, or end the bisection."""
        if run.bisection is None or run.evaluation is None:
            return None
        t = run.trigger
        bisection = self.bisections.get(t.repo, t.branch, run.model, run.bisection)
        if bisection is None or bisection.state is not BisectState.RUNNING:
            return bisection
        at = next((i for i, s in enumerate(bisection.steps) if s.run_id == run.run_id), None)
        if at is None or bisection.steps[at].side is not None:
            return bisection  # judged already (a republished run)
        rate = run.verdict_settings.false_failure_rate
        step = self._judged(bisection, bisection.steps[at], run.evaluation, rate)
        steps = (*bisection.steps[:at], step, *bisection.steps[at + 1 :])
        logger.info("bisection step judged", run_id=run.run_id, sha=step.sha, side=step.side)
        bad = self.runs.get(bisection.bad_run_id)
        judged = replace(bisection, steps=steps)
        if bad is None:  # its record is gone: nothing to start the next step from
            low, high = narrowed(bisection.line, steps)
            return self._end(judged, Ended(BisectState.INCONCLUSIVE, None, "run gone", low, high))
        return self._move_on(judged, bad)

    def _move_on(self, bisection: Bisection, bad: RunRecord) -> Bisection | None:
        """Start the next step (its run first: its id is fixed, so a second caller starts
        nothing new) and store it, or store the ending and tell people."""
        move = next_move(bisection)
        if isinstance(move, RunAt):
            if not self.start_step(
                bad, move.run_id, move.sha, bisection.runs_configs, bisection.good
            ):
                low, high = narrowed(bisection.line, bisection.steps)
                gone = Ended(BisectState.INCONCLUSIVE, None, "the suite is gone", low, high)
                return self._end(bisection, gone)
            step = Step(move.sha, move.run_id)
            moved = replace(bisection, steps=(*bisection.steps, step), updated_at=self._now())
            return moved if self.bisections.save(moved) else None
        if isinstance(move, Ended):
            return self._end(bisection, move)
        return None

    def _end(self, bisection: Bisection, end: Ended) -> Bisection | None:
        ended = replace(
            bisection,
            state=end.state,
            culprit=end.culprit,
            why=end.why,
            low=end.low,
            high=end.high,
            updated_at=self._now(),
        )
        if not self.bisections.save(ended):
            return None
        self.count("BisectionsEnded")
        logger.info(
            "bisection ended", run_id=ended.bad_run_id, state=end.state, culprit=end.culprit
        )
        self._tell(ended)
        self._diagnose(ended)
        return ended

    def _diagnose(self, bisection: Bisection) -> None:
        """The culprit against its parent, profiled (the suite's `diagnose:`); a failure is
        logged and counted, and the bisection's end stands."""
        if self.diagnose_culprit is None or bisection.culprit is None:
            return
        shas = [c.sha for c in bisection.line]
        at = shas.index(bisection.culprit)
        parent = shas[at - 1] if at > 0 else bisection.good
        bad = self.runs.get(bisection.bad_run_id)
        if bad is None:
            return
        try:
            self.diagnose_culprit(bad, bisection.culprit, parent, bisection.configs)
        except Exception:
            logger.exception("culprit's diagnosis not started", run_id=bisection.bad_run_id)
            self.count("DiagnosisFailures")

    def _tell(self, bisection: Bisection) -> None:
        """The alert again, and the pushed head's check run, with the bisection's end."""
        if self.alerts is not None:
            self.alerts.bisected(bisection)
        run = self.runs.get(bisection.bad_run_id)
        while run is not None and run.confirmed_by is not None:  # the run that gave the verdict
            run = self.runs.get(run.confirmed_by)
        if run is not None and run.evaluation is not None:
            self.statuses.bisected(run, bisection)
        if self.site is not None and bisection.culprit is not None and run is not None:
            self._mark_culprit(bisection, run)

    def _mark_culprit(self, bisection: Bisection, bad: RunRecord) -> None:
        """The culprit on the history site's chart, where its regression showed; the site is a
        view: a failure there is logged, and the bisection stays ended."""
        from distkpi.reporting.api import culprit_mark

        assert self.site is not None and bisection.culprit is not None
        text = f"culprit {bisection.culprit[:10]}: {bisection.why}"
        mark = culprit_mark(
            bad.finished_at or bisection.updated_at,
            bisection.culprit,
            bisection.bad_run_id,
            bisection.configs,
            text,
        )
        try:
            self.site.mark(bisection.repo, bisection.branch, bisection.model, mark)
        except Exception:
            logger.exception("culprit not marked on the site", run_id=bisection.bad_run_id)
            self.count("SiteFailures")

    def _judged(
        self, bisection: Bisection, step: Step, evaluation: Evaluation, rate: float
    ) -> Step:
        """The step's side at the suite's false-failure rate, with its GPU-hours and values."""
        configs = {c.name: c for c in evaluation.kpis.configs}
        gpu_hours = sum(c.gpu_hours or 0.0 for c in configs.values())
        if evaluation.verdict.state is State.ERROR:
            return replace(step, side=Side.ERROR, gpu_hours=gpu_hours)
        values = step_values(bisection, evaluation)
        # a step on neither side is judged again on the mean of its runs
        runs: dict[str, list[float]] = {k: [v] for k, v in values.items()}
        for earlier in bisection.steps:
            if earlier.sha == step.sha and earlier.side is Side.NEITHER:
                for k, v in earlier.values.items():
                    runs.setdefault(k, []).append(v)
        side = step_side(bisection.ends, runs, rate)
        return replace(step, side=side, gpu_hours=gpu_hours, values=values)

    def _ends(self, run: RunRecord, good: str, configs: Sequence[str]) -> list[Ends]:
        baseline = baseline_of(self.history, run)
        assert run.evaluation is not None
        return regression_ends(
            run.evaluation,
            baseline.rows,
            baseline.resets,
            run.verdict_settings,
            good=good,
            configs=configs,
            paired=run.spec.paired is not None,
        )

    def _cancel_older(self, newer: Bisection) -> None:
        """Never two bisections of one branch, model and configs: the older stops."""
        for older in self.bisections.of_branch(newer.repo, newer.branch, newer.model):
            if (
                older.bad_run_id == newer.bad_run_id
                or older.state is not BisectState.RUNNING
                or older.configs != newer.configs
            ):
                continue
            why = f"cancelled: a newer bisection, of {newer.bad[:10]}, covers it"
            cancelled = replace(older, state=BisectState.CANCELLED, why=why, updated_at=self._now())
            if not self.bisections.save(cancelled):
                continue
            for step in older.steps:
                if step.side is None:
                    self.cancel_step(step.run_id, why)
            self.count("BisectionsCancelled")
            logger.info("bisection cancelled", run_id=older.bad_run_id, by=newer.bad_run_id)

    def _suite(self, model: str) -> Suite | None:
        suites, _ = self.catalog.suites()
        return next((s for s in suites if s.name == model), None)

    def _now(self) -> str:
        return self.clock().isoformat(timespec="seconds")
