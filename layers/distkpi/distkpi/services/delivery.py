"""A delivery's runs: under the delivery's claim, a run of each suite it concerns (of the
configs its `when:` runs on the delivery's event), broken suites and skipped ones reported,
a pull request's older runs superseded; or, for a change not admitted, every suite saying it
awaits approval."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from distkpi.domain.commit_status import State, pending_description
from distkpi.domain.github.commits import NoBase
from distkpi.domain.github.trust import NeedsApproval, approval_description
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.planning.jobs import run_id_for, run_spec_for
from distkpi.domain.planning.suites import BrokenSuite, Suite
from distkpi.services.change import Change
from distkpi.services.ports import Counter, Deliveries, SuiteSource, no_metrics
from distkpi.services.run_launcher import Delivery, Outcome, RunLauncher, repeat_of
from distkpi.services.statuses import StatusPublisher
from distkpi.services.supersede import Superseder

logger = Logger(child=True)

# what the suite catalog gave: the suites, and the files that could not be read
Catalog = tuple[list[Suite], list[BrokenSuite]]


@dataclass
class DeliveryStarter:
    deliveries: Deliveries
    catalog: SuiteSource
    statuses: StatusPublisher
    launcher: RunLauncher
    # None: a pull request's older runs go on
    superseder: Superseder | None = None
    count: Counter = no_metrics

    def handle(
        self,
        trigger: Trigger,
        delivery: str,
        only: Sequence[str] | None = None,
        base: str | None = None,
        catalog: Catalog | None = None,
    ) -> Delivery:
        """A delivery's whole transaction: done once (its claim expires with the invocation,
        its answer is stored for repeats); if starting raises, released for GitHub's
        redelivery; broken suites reported; older runs of a pull request superseded.
        ``only``: just those suites (a re-run), whatever their paths; ``base``: the commit
        its paired suites measure against, when known (a re-run keeps the run's own);
        ``catalog``: the suites as read already for this delivery (the catalog is read once)."""
        change = Change(self.statuses, trigger, base)
        seen: list[tuple[list[Suite], list[BrokenSuite], list[Suite]]] = []

        def start() -> dict[str, Any]:
            suites, broken = catalog if catalog is not None else self.catalog.suites()
            suites = [s for s in suites if s.runs_for(trigger.repo)]
            untouched: list[Suite] = []
            if only is not None:
                suites, broken = [s for s in suites if s.name in only], []
            else:
                suites, untouched = self._touched(suites, change)
            started = self.start_runs(trigger, delivery, suites, change)
            seen.append((suites, broken, untouched))
            return Delivery(Outcome.STARTED, started, [s.name for s in broken]).to_json()

        done = self.deliveries.once(delivery, start)
        if done.repeat:
            return repeat_of(done.answer)
        ((suites, broken, untouched),) = seen
        self.report_broken(trigger, broken)
        self.report_skipped(trigger, untouched)
        if self.superseder is not None:
            self.superseder.quietly(trigger, [s.name for s in suites])
        assert done.answer is not None
        return Delivery.from_json(done.answer)

    def start_runs(
        self,
        trigger: Trigger,
        delivery: str,
        suites: Iterable[Suite],
        change: Change | None = None,
    ) -> list[str]:
        """A run of each suite; a paired suite's measures the commit against its base (a
        pull request's merge base, a push's first parent), and without one it is `error` at
        once, saying why, with no job submitted."""
        change = change or Change(self.statuses, trigger)
        started: list[str] = []
        for whole in suites:
            # the configs its `when:` runs on this event (the base config always runs)
            suite = whole.for_event(trigger.event, trigger.labels)
            run_id = run_id_for(suite.name, trigger.sha, delivery)
            base = change.paired_base() if suite.verdict.paired is not None else None
            no_base = base if isinstance(base, NoBase) else None
            spec = run_spec_for(run_id, trigger, suite, base if isinstance(base, str) else None)
            record = self.launcher.record(run_id, trigger, suite, spec, delivery)
            gpus = max(c.gpus for c in spec.configs)
            description = pending_description(len(spec.configs), gpus)
            if self.launcher.launch(record, suite, description, no_base, resume=True):
                started.append(run_id)
        return started

    def await_approval(self, waiting: NeedsApproval, label: str) -> list[str]:
        """Nothing runs: every suite of the repository says it needs approval, and a stale
        approval label comes off. The suites that said so."""
        trigger = waiting.trigger
        suites, _ = self.catalog.suites()
        names = [s.name for s in suites if s.runs_for(trigger.repo)]
        for name in names:
            self.statuses.post_for_suite(
                trigger, name, State.PENDING, approval_description(label), awaiting_approval=True
            )
        if waiting.stale_label:
            self.statuses.withdraw_approval(trigger, label)
        self.count("RunsAwaitingApproval", len(names))
        logger.info("runs await approval", reason=waiting.reason, suites=names, sha=trigger.sha)
        return names

    def _touched(self, suites: list[Suite], change: Change) -> tuple[list[Suite], list[Suite]]:
        """(suites the change concerns, suites whose `paths` it touches none of); the files
        are asked of GitHub once, and only when a suite has paths."""
        if all(s.paths is None for s in suites):
            return suites, []
        changed = change.changed_files()
        touched = [s for s in suites if s.touched_by(changed)]
        return touched, [s for s in suites if s not in touched]

    def report_skipped(self, trigger: Trigger, suites: Iterable[Suite]) -> None:
        """`success`, so that a required check does not block a change it does not concern."""
        for suite in suites:
            description = f"skipped: no change under {', '.join(suite.paths or ())}"
            self.statuses.post_for_suite(trigger, suite.name, State.SUCCESS, description)
            self.count("SuitesSkipped")
            logger.info("suite skipped: no change under its paths", suite=suite.name)

    def report_broken(self, trigger: Trigger, broken: Iterable[BrokenSuite]) -> None:
        """A suite that cannot be read gets an `error` status, not a silent skip."""
        for suite in broken:
            logger.error("suite not valid; not run", suite=suite.name, problem=suite.problem)
            self.count("SuitesInvalid")
            self.statuses.post_broken_suite(trigger, suite)
