"""Commit statuses: one context per suite, a link to the run's report, failures counted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from aws_lambda_powertools import Logger

from distkpi.adapters.github import CommitStatus, GitHubStatusClient
from distkpi.domain.commit_status import State
from distkpi.domain.contracts import RunSpec
from distkpi.exceptions import GitHubError

logger = Logger(child=True)


class Counter(Protocol):
    def __call__(self, name: str, value: int = 1) -> None: ...


def no_metrics(name: str, value: int = 1) -> None:
    del name, value


def utcnow() -> datetime:
    return datetime.now(UTC)


Clock = Callable[[], datetime]


@dataclass
class StatusPublisher:
    github: GitHubStatusClient
    report_url: Callable[[str], str | None]
    count: Counter = no_metrics

    def post(self, run: RunSpec, state: State, description: str) -> bool:
        """Post one status; False (logged and counted) when GitHub refused or was down."""
        status = CommitStatus(
            repo=run.repo,
            sha=run.sha,
            state=state.value,
            context=f"distkpi/{run.model}",
            description=description,
            target_url=self.report_url(run.run_id),
        )
        try:
            self.github.post(status)
        except GitHubError:
            logger.exception("status not posted", run_id=run.run_id, state=state.value)
            self.count("StatusPostFailures")
            return False
        self.count("StatusesPosted")
        logger.info("status posted", run_id=run.run_id, state=state.value)
        return True
