"""What distkpi says to GitHub and asks of it: commit statuses (one context per suite, a
link to the run's report, failures counted), the approval label, a change's files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.adapters.github import CommitStatus, GitHubStatusClient
from distkpi.domain.commit_status import State
from distkpi.domain.contracts import RunSpec
from distkpi.domain.suites import BrokenSuite
from distkpi.domain.webhook import Trigger
from distkpi.exceptions import GitHubError
from distkpi.services.ports import Counter, no_metrics

logger = Logger(child=True)


@dataclass
class StatusPublisher:
    github: GitHubStatusClient
    report_url: Callable[[str], str | None]
    count: Counter = no_metrics

    def post(self, run: RunSpec, state: State, description: str, *, report: bool = False) -> bool:
        """Post one status, linking the run's report when there is one; False (logged and
        counted) when GitHub refused or was down."""
        status = CommitStatus(
            repo=run.repo,
            sha=run.sha,
            state=state.value,
            context=f"distkpi/{run.model}",
            description=description,
            target_url=self.report_url(run.run_id) if report else None,
        )
        return self._send(status, {"run_id": run.run_id})

    def post_broken_suite(self, trigger: Trigger, suite: BrokenSuite) -> bool:
        """`error` under the suite's context, saying what is wrong with its file."""
        return self.post_for_suite(trigger, suite.name, State.ERROR, suite.problem)

    def post_for_suite(self, trigger: Trigger, suite: str, state: State, description: str) -> bool:
        """A status under a suite's context for a commit that has no run of it."""
        status = CommitStatus(
            repo=trigger.repo,
            sha=trigger.sha,
            state=state.value,
            context=f"distkpi/{suite}",
            description=description,
        )
        return self._send(status, {"suite": suite})

    def changed_files(self, trigger: Trigger) -> list[str] | None:
        """The files the trigger's commit changes; None when that cannot be known."""
        base = trigger.compared_from
        if base is None:
            return None
        files = self.github.changed_files(trigger.repo, base, trigger.sha)
        if files is None:
            logger.info("changed files unknown: every suite runs", extra={"sha": trigger.sha})
        return files

    def withdraw_approval(self, trigger: Trigger, label: str) -> bool:
        """Take the approval label off the pull request (it was given to an earlier head)."""
        assert trigger.pull_request is not None
        try:
            self.github.remove_label(trigger.repo, trigger.pull_request, label)
        except GitHubError:
            logger.exception("approval label not removed", extra={"label": label})
            self.count("LabelRemovalFailures")
            return False
        logger.info("stale approval label removed", extra={"label": label})
        return True

    def _send(self, status: CommitStatus, keys: dict[str, str]) -> bool:
        extra = {"state": status.state, **keys}
        try:
            self.github.post(status)
        except GitHubError:
            logger.exception("status not posted", extra=extra)
            self.count("StatusPostFailures")
            return False
        self.count("StatusesPosted")
        logger.info("status posted", extra=extra)
        return True
