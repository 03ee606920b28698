"""The regressions a branch alerted on, as items with a life (domain/regressions.py): opened
with the alert, fixed when a later run of the branch is back in range, accepted with their
run, acknowledged by a person, and told their bisection's culprit."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

from aws_lambda_powertools import Logger

from distkpi.domain.bisect.plan import Bisection
from distkpi.domain.github.acceptance import Acceptance
from distkpi.domain.records import RunRecord
from distkpi.domain.regressions import (
    SYSTEM,
    UNRESOLVED,
    Regression,
    RegressionState,
    opened,
)
from distkpi.services.ports import Clock, Counter, Regressions, no_metrics, utcnow

logger = Logger(child=True)

SAVE_TRIES = 3  # a regression changed by another writer meanwhile is read again


class RegressionNotFoundError(LookupError):
    """No such regression (the id names no stored one)."""


@dataclass
class RegressionLedger:
    regressions: Regressions
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def opened(self, run: RunRecord, configs: Collection[str]) -> list[Regression]:
        """One `open` regression per regressed KPI of ``configs`` (those the alert named);
        a run published again stores none twice."""
        evaluation, t = run.evaluation, run.trigger
        if evaluation is None:
            return []
        regressed = [
            j for j in evaluation.judgements if j.config in configs and j.verdict == "regressed"
        ]
        made = opened(
            repo=t.repo,
            branch=t.branch,
            model=run.model,
            run_id=run.run_id,
            sha=t.sha,
            at=self._now(),
            regressed=regressed,
        )
        created = [r for r in made if self.regressions.create(r)]
        self.count("RegressionsOpened", len(created))
        return created

    def check_fixed(self, run: RunRecord) -> list[Regression]:
        """The branch's unresolved regressions that this later run's value of their KPI
        brings back inside the range they had before, marked `fixed` by it."""
        evaluation, t = run.evaluation, run.trigger
        if evaluation is None:
            return []
        values = {(j.config, j.kpi): j.value for j in evaluation.judgements}
        fixed = []
        for r in self.regressions.of_branch(t.repo, t.branch, run.model):
            if r.state not in UNRESOLVED or r.run_id == run.run_id:
                continue
            value = values.get((r.config, r.kpi))
            if not r.back_in_range(value):
                continue
            note = f"{run.run_id} at {t.sha[:10]}: {value:.6g} back in range"

            def fix(found: Regression, note: str = note) -> Regression | None:
                if found.state not in UNRESOLVED:
                    return None
                moved = found.moved(RegressionState.FIXED, SYSTEM, self._now(), note)
                return replace(moved, fixed_by=run.run_id)

            done = self._change(r, fix)
            if done is not None:
                fixed.append(done)
        self.count("RegressionsFixed", len(fixed))
        return fixed

    def accepted(self, run: RunRecord, acceptance: Acceptance) -> list[Regression]:
        """The run's own regressions, `accepted` with who accepted it and why."""
        t = run.trigger
        kpis = set(acceptance.kpis)
        done = []
        for r in self.regressions.of_branch(t.repo, t.branch, run.model):
            if r.run_id != run.run_id or (r.config, r.kpi) not in kpis:
                continue
            moved = self._change(
                r,
                lambda found: (
                    found.moved(
                        RegressionState.ACCEPTED, acceptance.login, acceptance.at, acceptance.reason
                    )
                    if found.state in UNRESOLVED
                    else None
                ),
            )
            if moved is not None:
                done.append(moved)
        return done

    def acknowledge(
        self, repo: str, branch: str, model: str, regression_id: str, *, who: str, note: str
    ) -> Regression:
        """`acknowledged` by ``who``; RegressionNotFoundError when there is none, ValueError
        when it is no longer open."""
        found = self.regressions.get(repo, branch, model, regression_id)
        if found is None:
            raise RegressionNotFoundError(f"no regression {regression_id}")

        def ack(r: Regression) -> Regression:
            if r.state is not RegressionState.OPEN:
                raise ValueError(f"regression {regression_id} is {r.state.value}, not open")
            return r.moved(RegressionState.ACKNOWLEDGED, who, self._now(), note)

        done = self._change(found, ack)
        assert done is not None
        return done

    def bisected(self, bisection: Bisection) -> None:
        """The regressions of the bisected run learn its culprit and how it ended."""
        b = bisection
        for r in self.regressions.of_branch(b.repo, b.branch, b.model):
            if r.run_id == b.bad_run_id:
                self._change(r, lambda found: replace(found, culprit=b.culprit, diagnosis=b.why))

    def _change(
        self, found: Regression, change: Callable[[Regression], Regression | None]
    ) -> Regression | None:
        """Store ``change`` of the regression, read again when another writer changed it
        meanwhile; None when the change no longer applies."""
        for _ in range(SAVE_TRIES):
            after = change(found)
            if after is None:
                return None
            if self.regressions.save(found, after):
                return after
            again = self.regressions.get(found.repo, found.branch, found.model, found.id)
            if again is None:
                return None
            found = again
        logger.warning("regression not changed: written meanwhile", regression=found.id)
        return None

    def _now(self) -> str:
        return self.clock().isoformat(timespec="seconds")
