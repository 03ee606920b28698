"""The one comment per pull request and suite (domain/github/pr_comment.py): created on the
pull request's first finished run, edited in place on later ones, as the suite's `comment:`
says, and edited again when the run is accepted. Its id is kept in the table (`Comments`),
not found again by its marker: a marker anyone can paste into a comment of their own, and
the kept outcome is what `on_change` compares with, so the thread is never read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.github.comment_mode import CommentMode
from distkpi.domain.github.pr_comment import (
    CommentFacts,
    KeptComment,
    pull_request_comment,
    should_write,
)
from distkpi.domain.records import RunRecord
from distkpi.exceptions import GitHubError, GitHubNotFoundError, StorageError
from distkpi.services.ports import (
    Comments,
    Counter,
    GitHub,
    PullRequests,
    SuiteSource,
    no_metrics,
)

logger = Logger(child=True)


@dataclass
class PullRequestComments:
    github: GitHub
    kept: Comments
    catalog: SuiteSource
    pull_requests: PullRequests
    report_url: Callable[[str], str | None]
    web_url: str = "https://github.com"
    count: Counter = no_metrics

    def after(self, run: RunRecord, *, report: bool, diagnoses: Sequence[str] = ()) -> bool:
        """Post or edit the suite's comment on the run's pull request (saying who accepted
        it, once accepted); True when GitHub was told. A failure is logged and counted (the
        status still goes out, and the pull request's next run writes the comment again).
        ``diagnoses``: the lines of its diagnosis job, once done."""
        trigger, evaluation = run.trigger, run.evaluation
        number = trigger.pull_request
        if trigger.event != "pull_request" or number is None or evaluation is None:
            return False
        extra = {"run_id": run.run_id, "pull_request": number}
        try:
            mode = self.mode_of(run.model)
            if mode is CommentMode.NEVER or self._superseded(run, number):
                return False
            facts = CommentFacts(
                run.model,
                trigger.repo,
                trigger.sha,
                run.run_id,
                self.report_url(run.run_id) if report else None,
                self.web_url,
            )
            comment = pull_request_comment(
                evaluation, facts, diagnoses=diagnoses, acceptance=run.accepted
            )
            kept = self.kept.get(trigger.repo, number, run.model)
            if not should_write(mode, kept.outcome if kept else None, comment.outcome):
                logger.info("pull request comment unchanged", extra=extra)
                return False
            comment_id = self._write(trigger.repo, number, kept, comment.body)
            self.kept.keep(
                trigger.repo, number, run.model, KeptComment(comment_id, comment.outcome)
            )
        except (GitHubError, StorageError) as exc:
            logger.error("pull request comment not written", extra={**extra, "error": str(exc)})
            self.count("CommentFailures")
            return False
        self.count("CommentsWritten")
        logger.info("pull request comment written", extra={**extra, "comment_id": comment_id})
        return True

    def mode_of(self, suite: str) -> CommentMode:
        """The suite's `comment:` as the stack holds it now (on_change when it is gone)."""
        suites, _ = self.catalog.suites()
        found = next((s for s in suites if s.name == suite), None)
        return found.comment if found is not None else CommentMode.ON_CHANGE

    def _write(self, repo: str, number: int, kept: KeptComment | None, body: str) -> int:
        """Edit the kept comment; create one when there is none, or a person deleted it."""
        if kept is not None:
            try:
                self.github.update_issue_comment(repo, kept.comment_id, body)
                return kept.comment_id
            except GitHubNotFoundError:
                logger.info("pull request comment gone: a new one", extra={"id": kept.comment_id})
        return self.github.create_issue_comment(repo, number, body)

    def _superseded(self, run: RunRecord, number: int) -> bool:
        """Whether a later run of the suite was started for the pull request (an older run
        published late must not put its table back)."""
        runs = self.pull_requests.runs(run.trigger.repo, number)
        return any(r.model == run.model and r.created_at > run.created_at for r in runs)
