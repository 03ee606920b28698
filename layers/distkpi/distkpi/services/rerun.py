"""Re-runs: GitHub's "re-run" of a check (or of every check of a commit) starts new runs of
those suites at that commit, under the trust decision of the delivery that admitted it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from aws_lambda_powertools import Logger

from distkpi.domain.github.webhook import Rerun, Trigger
from distkpi.domain.purpose import policy_of
from distkpi.domain.records import RunRecord, RunStatus
from distkpi.services.delivery import DeliveryStarter
from distkpi.services.ports import Counter, Runs, SuiteSource, no_metrics
from distkpi.services.run_launcher import Delivery, Outcome
from distkpi.services.statuses import StatusPublisher

logger = Logger(child=True)


@dataclass
class Reruns:
    runs: Runs
    catalog: SuiteSource
    statuses: StatusPublisher
    delivery: DeliveryStarter
    count: Counter = no_metrics

    def rerun(self, rerun: Rerun, delivery: str) -> Delivery:
        """New runs of the re-requested suites at that commit (new run ids; the earlier runs
        stay in the history, where a commit counts once). A suite whose run of that commit
        is still going is refused, saying so in its check.

        A re-run goes through the trust decision of the delivery that started the run it
        repeats, never around it: it repeats a run of this commit (the check's, or each
        suite's latest), with that run's trigger, so a commit that was never admitted (a
        fork's pull request awaiting approval: its check is `action_required`) starts
        nothing, and a fork's check naming no pull request is never taken for a push."""
        trigger = rerun.trigger
        # A/A runs are no check of the commit's: a re-run neither repeats nor waits for them
        of_commit = [
            r
            for r in self.runs.of_commit(trigger.repo, trigger.sha)
            if policy_of(r).repeated_by_rerun
        ]
        going = {
            r.model: r
            for r in of_commit
            if r.status in (RunStatus.RUNNING, RunStatus.CONFIRMING)
            and (rerun.suites is None or r.model in rerun.suites)
        }
        for run in going.values():
            message = f"re-run refused: run {run.run_id} of this commit is still going"
            self.statuses.still_going(run.spec, message)
            logger.info("re-run refused: run still going", run_id=run.run_id)
        if rerun.suites is not None and set(rerun.suites) <= set(going):
            return Delivery(Outcome.STARTED, refused_for=[r.run_id for r in going.values()])
        catalog = self.catalog.suites()
        suites, _ = catalog
        wanted = [
            s.name
            for s in suites
            if (rerun.suites is None or s.name in rerun.suites) and s.name not in going
        ]
        admitted, repeated = _admitted_runs(of_commit, wanted, rerun.previous)
        never = [name for name in wanted if name not in admitted]
        if never:
            self.count("RerunsRefused", len(never))
            logger.warning("re-run refused: no admitted run of this commit", suites=never)
        refused = [r.run_id for r in going.values()]
        if repeated is None:
            return Delivery(Outcome.STARTED, refused_for=refused, never_admitted=never)
        base = _paired_base(of_commit, repeated, admitted)
        started = self.delivery.handle(
            repeated, delivery, only=admitted, base=base, catalog=catalog
        )
        self.count("RerunsStarted", len(started.runs))
        return replace(started, refused_for=refused, never_admitted=never)


def _admitted_runs(
    of_commit: Sequence[RunRecord], wanted: Sequence[str], previous: str | None
) -> tuple[list[str], Trigger | None]:
    """The suites of ``wanted`` a re-run may start, and the trigger they start with: that of
    the run re-requested (``previous``, when it is a run of this commit), else of the latest
    run of the commit among those suites; only suites that already ran with that trigger."""
    runs = sorted(of_commit, key=lambda r: r.created_at)
    if previous is not None:
        runs = [r for r in runs if previous in (r.first_run_id, r.run_id)]
    candidates = [r for r in runs if r.model in wanted]
    if not candidates:
        return [], None
    trigger = candidates[-1].trigger
    admitted = {r.model for r in candidates if r.trigger == trigger}
    return [name for name in wanted if name in admitted], trigger


def _paired_base(
    of_commit: Sequence[RunRecord], trigger: Trigger, suites: Sequence[str]
) -> str | None:
    """The base the repeated runs were paired with (one trigger: one base), so that a
    re-run of a paired run measures against the same commit without asking GitHub again."""
    bases = [
        r.spec.paired.base_sha
        for r in of_commit
        if r.trigger == trigger and r.model in suites and r.spec.paired is not None
    ]
    return bases[-1] if bases else None
