"""The stack's schedule (nightly by default): for each repository it lists, the head of the
default branch measured by every suite with a config whose `when:` names `schedule` (with
the configs that run on it: those and the ones without a `when:`), once per head: a second
schedule on the same head starts nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.github.webhook import Trigger
from distkpi.exceptions import GitHubError
from distkpi.services.delivery import DeliveryStarter
from distkpi.services.ports import Counter, GitHub, SuiteSource, no_metrics
from distkpi.services.run_launcher import Outcome

logger = Logger(child=True)

SCHEDULE = "schedule"  # the trigger's event, as a suite's `when:` names it


def schedule_delivery(repo: str, sha: str) -> str:
    """The delivery a schedule makes of a head: the same for every schedule that finds it."""
    return f"{SCHEDULE}:{repo}@{sha}"


@dataclass
class ScheduledRuns:
    github: GitHub
    catalog: SuiteSource
    delivery: DeliveryStarter
    count: Counter = no_metrics

    def start(self, repositories: Iterable[str]) -> dict[str, list[str]]:
        """Each repository's runs started (none: no suite of it runs on a schedule, or its
        head had them already). A repository whose head GitHub could not tell is left for
        the next attempt, after the others: GitHubError names them all."""
        suites, broken = self.catalog.suites()
        started: dict[str, list[str]] = {}
        unresolved: list[str] = []
        for repo in repositories:
            names = [s.name for s in suites if s.runs_for(repo) and s.runs_on_schedule()]
            if not names:
                started[repo] = []
                continue
            try:
                branch, sha = self.github.default_branch_head(repo)
            except GitHubError as exc:
                logger.warning("schedule: head not known", repo=repo, reason=str(exc))
                self.count("SchedulesNotResolved")
                unresolved.append(f"{repo} ({exc})")
                continue
            trigger = Trigger(
                repo=repo,
                sha=sha,
                ref=f"refs/heads/{branch}",
                branch=branch,
                event=SCHEDULE,
                base_branch=branch,
            )
            handled = self.delivery.handle(
                trigger, schedule_delivery(repo, sha), only=names, catalog=(suites, broken)
            )
            if handled.outcome is Outcome.DUPLICATE:
                logger.info("schedule: head measured already", repo=repo, sha=sha)
                started[repo] = []
                continue
            self.count("ScheduledRuns", len(handled.runs))
            logger.info("schedule: runs started", repo=repo, sha=sha, runs=handled.runs)
            started[repo] = handled.runs
        if unresolved:
            raise GitHubError(f"schedule: no head for {', '.join(unresolved)}")
        return started
