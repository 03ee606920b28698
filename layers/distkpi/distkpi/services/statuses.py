"""What distkpi says to GitHub and asks of it: commit statuses, or with App auth check runs
(one per suite, `distkpi/<model>`, carrying the KPI table), a link to the run's report,
failures counted; the approval label; a change's files and merge base, a commit's parents."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from aws_lambda_powertools import Logger

from distkpi.domain.bisect.line import Commit, NoLine, first_parent_line
from distkpi.domain.commit_status import CommitStatus, State
from distkpi.domain.contracts import RunSpec
from distkpi.domain.github.acceptance import (
    ACCEPT_ACTION,
    accepted_description,
    to_accept,
)
from distkpi.domain.github.checks import CheckRun, conclusion_of
from distkpi.domain.github.commits import Comparison
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.planning.suites import BrokenSuite
from distkpi.domain.purpose import policy_of_spec
from distkpi.domain.untrusted import neutral
from distkpi.exceptions import GitHubAuthError, GitHubError, GitHubWriteSkipped, StorageError
from distkpi.services.ports import CheckRunIds, Counter, GitHub, no_metrics

if TYPE_CHECKING:
    from distkpi.domain.bisect.plan import Bisection
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.records import RunRecord
    from distkpi.services.check_sections import CheckSections

logger = Logger(child=True)


def status_context(run: RunSpec) -> str:
    """The suite's context (and check run's name), `distkpi/<model>`; an A/A calibration
    run's is `distkpi/<model>/calibration` (its purpose's policy says)."""
    return policy_of_spec(run).context.format(model=run.model)


@dataclass
class CommitStatuses:
    """A token's reporter: one commit status per suite (`pending` while a run goes on)."""

    github: GitHub
    count: Counter = no_metrics
    step: ClassVar[str] = "commit status"

    def result(
        self,
        run: RunSpec,
        state: State,
        description: str,
        *,
        target: str | None,
        evaluation: Evaluation | None,
        appendix: str,
        acceptable: tuple[str, ...] | None = None,
        skippable: bool = False,
    ) -> bool:
        del evaluation, appendix, acceptable  # a status has room for its description only
        status = CommitStatus(
            repo=run.repo,
            sha=run.sha,
            state=state.value,
            context=status_context(run),
            description=neutral(description),
            target_url=target,
        )
        return self._send(status, {"run_id": run.run_id}, skippable)

    def in_progress(self, run: RunSpec, title: str, summary: str) -> bool:
        """A commit status stays `pending`: nothing is posted."""
        del run, title, summary
        return True

    def for_suite(
        self, trigger: Trigger, suite: str, state: State, description: str, details: str | None
    ) -> bool:
        del details  # a status links no pull request
        status = CommitStatus(
            repo=trigger.repo,
            sha=trigger.sha,
            state=state.value,
            context=f"distkpi/{suite}",
            description=neutral(description),
        )
        return self._send(status, {"suite": suite})

    def _send(self, status: CommitStatus, keys: dict[str, str], skippable: bool = False) -> bool:
        extra = {"state": status.state, **keys}
        try:
            self.github.post(status, skippable=skippable)
        except GitHubWriteSkipped:
            left_out(self.count, extra)
            return False
        except GitHubError as exc:
            failed(self.count, exc, "status not posted", extra)
            return False
        self.count("StatusesPosted")
        logger.info("status posted", extra=extra)
        return True


@dataclass
class CheckRuns:
    """An App's reporter: one check run per run (`distkpi/<model>`, carrying the KPI table),
    created once when the run starts and updated once with its verdict. Its id is kept when
    it is created (on the run's item; a suite's with no run by its external id), so no
    update asks GitHub for it: a check run whose id was never kept is created anew."""

    github: GitHub
    count: Counter = no_metrics
    ids: CheckRunIds | None = None  # None: every post creates a check run
    step: ClassVar[str] = "check run"

    def result(
        self,
        run: RunSpec,
        state: State,
        description: str,
        *,
        target: str | None,
        evaluation: Evaluation | None,
        appendix: str,
        acceptable: tuple[str, ...] | None = None,
        skippable: bool = False,
    ) -> bool:
        """``acceptable``: the KPIs the suite lets a person accept (None: all); a failure
        on regressions they allow offers the "Accept regression" button, any other
        conclusion takes it off."""
        conclusion, title = conclusion_of(state, description)
        summary = neutral(title, markdown=True)
        text = None
        actions: tuple[dict[str, str], ...] | None = None
        if evaluation is not None:
            _, refused = to_accept(evaluation, run.accuracy_tolerance, acceptable)
            offered = state is State.FAILURE and refused is None
            actions = (ACCEPT_ACTION,) if offered else ()
            from distkpi.domain.github.check_summary import problems_text, summary_markdown

            summary = summary_markdown(evaluation, target, run.target_accuracy) + appendix
            text = problems_text(evaluation.kpis.configs)
        check = CheckRun(
            name=status_context(run),
            head_sha=run.sha,
            external_id=run.run_id,
            status="queued" if conclusion is None else "completed",
            title=title,
            summary=summary,
            conclusion=conclusion,
            text=text,
            details_url=target,
            actions=actions,
        )
        return self._of_run(run, check, skippable)

    def in_progress(self, run: RunSpec, title: str, summary: str) -> bool:
        check = CheckRun(
            name=status_context(run),
            head_sha=run.sha,
            external_id=run.run_id,
            status="in_progress",
            title=title,
            summary=neutral(summary, markdown=True),
        )
        return self._of_run(run, check)

    def for_suite(
        self, trigger: Trigger, suite: str, state: State, description: str, details: str | None
    ) -> bool:
        """A check run of a suite no run has (its external id: suite and commit)."""
        conclusion, title = conclusion_of(state, description)
        check = CheckRun(
            name=f"distkpi/{suite}",
            head_sha=trigger.sha,
            external_id=f"{suite}@{trigger.sha}",
            status="completed",
            title=title,
            summary=neutral(title, markdown=True),
            conclusion="action_required" if details else conclusion or "failure",
            details_url=details,
        )
        return self._post(trigger.repo, check, {"suite": suite}, None)

    def _of_run(self, run: RunSpec, check: CheckRun, skippable: bool = False) -> bool:
        return self._post(run.repo, check, {"run_id": run.run_id}, run.run_id, skippable)

    def _post(
        self,
        repo: str,
        check: CheckRun,
        keys: dict[str, str],
        run_id: str | None,
        skippable: bool = False,
    ) -> bool:
        """Update the check run by its kept id, else create it and keep its id."""
        extra = {"state": check.conclusion or check.status, **keys}
        body = check.body()
        try:
            kept = self._kept(repo, check.external_id, run_id)
            if kept is not None:
                self.github.update_check_run(repo, kept, body, skippable=skippable)
            else:
                created = self.github.create_check_run(repo, body, skippable=skippable)
                self._keep(repo, check.external_id, run_id, created)
        except GitHubWriteSkipped:
            left_out(self.count, extra)
            return False
        except GitHubError as exc:
            failed(self.count, exc, "check run not posted", extra)
            return False
        self.count("StatusesPosted")
        logger.info("check run posted", extra=extra)
        return True

    def _kept(self, repo: str, external_id: str, run_id: str | None) -> int | None:
        if self.ids is None:
            return None
        try:
            if run_id is None:
                return self.ids.suite_check_run(repo, external_id)
            return self.ids.check_run(run_id)
        except StorageError:
            logger.exception("check run id not read", extra={"external_id": external_id})
            return None

    def _keep(self, repo: str, external_id: str, run_id: str | None, check_run: int) -> None:
        """The check run is posted whatever happens here: a failure to keep its id is
        logged and counted, and the next post creates another."""
        if self.ids is None:
            return
        try:
            if run_id is None:
                self.ids.set_suite_check_run(repo, external_id, check_run)
            else:
                self.ids.set_check_run(run_id, check_run)
        except StorageError:
            logger.exception("check run id not kept", extra={"external_id": external_id})
            self.count("CheckRunIdsNotKept")


def left_out(count: Counter, extra: Mapping[str, object]) -> None:
    """A skippable status (a run's `pending`) not sent: GitHub's write rate was spent, and
    the run's result, posted when it ends, stands without it."""
    logger.info("status left out: GitHub's write rate is spent", extra=extra)
    count("StatusesLeftOut")


def failed(count: Counter, exc: GitHubError, message: str, extra: Mapping[str, object]) -> None:
    logger.error(message, extra={**extra, "error": str(exc)})
    count("StatusPostFailures")
    if isinstance(exc, GitHubAuthError):
        count("GitHubAuthFailures")


@dataclass
class StatusPublisher:
    github: GitHub
    report_url: Callable[[str], str | None]
    # what a check run posted again gathers below its table
    sections: CheckSections
    count: Counter = no_metrics
    # App auth: check runs instead of commit statuses
    checks: bool = False
    # where people read the repository (a pull request's page), for action_required
    web_url: str = "https://github.com"
    # where check run ids are kept (the table); None: every post creates a check run
    check_run_ids: CheckRunIds | None = None

    def __post_init__(self) -> None:
        self.reporter: CommitStatuses | CheckRuns = (
            CheckRuns(self.github, self.count, self.check_run_ids)
            if self.checks
            else CommitStatuses(self.github, self.count)
        )

    def post(
        self,
        run: RunSpec,
        state: State,
        description: str,
        *,
        report: bool = False,
        evaluation: Evaluation | None = None,
        appendix: str = "",
        acceptable: tuple[str, ...] | None = None,
        skippable: bool = False,
    ) -> bool:
        """Post one status (or check run), linking the run's report when there is one, a
        check run's summary followed by ``appendix`` (markdown made of neutral text), and a
        failure on regressions ``acceptable`` allows offering the accept button; False
        (logged and counted) when GitHub refused or was down, or when a ``skippable`` one
        would have waited for its turn under GitHub's limits."""
        target = self.report_url(run.run_id) if report else None
        return self.reporter.result(
            run,
            state,
            description,
            target=target,
            evaluation=evaluation,
            appendix=appendix,
            acceptable=acceptable,
            skippable=skippable,
        )

    def accepted(self, run: RunRecord, report: bool = True) -> bool:
        """`success`, "accepted by @login: reason" (``run.accepted``); a check run keeps its
        table and its sections, ends with who accepted what, and offers the button no more."""
        return self.current(run, report=report)

    def current(
        self,
        run: RunRecord,
        *,
        report: bool = True,
        bisection: Bisection | None = None,
        diagnosis: list[str] | None = None,
    ) -> bool:
        """The run's status, or its check run whole, as it stands: its verdict, or who
        accepted it, and (a check run) every section the run has by then (sections:
        ``bisection`` or ``diagnosis`` just learnt are not read again)."""
        evaluation = run.evaluation
        assert evaluation is not None
        appendix = ""  # a commit status has room for its description only
        if self.checks:
            appendix = self.sections.of(run, bisection=bisection, diagnosis=diagnosis)
        if run.accepted is not None:
            state = State.SUCCESS
            description = accepted_description(run.accepted.login, run.accepted.reason)
        else:
            state, description = evaluation.verdict.state, evaluation.description
        return self.post(
            run.spec,
            state,
            description,
            report=report,
            evaluation=evaluation,
            appendix=appendix,
            acceptable=run.verdict_settings.acceptable,
        )

    def still_going(self, run: RunSpec, message: str) -> bool:
        """Say in a running run's check why pressing "Re-run" started nothing."""
        summary = f"{message}: its result will conclude this check; re-run it after."
        return self.reporter.in_progress(run, message, summary)

    def post_broken_suite(self, trigger: Trigger, suite: BrokenSuite) -> bool:
        """`error` under the suite's context, saying what is wrong with its file."""
        return self.post_for_suite(trigger, suite.name, State.ERROR, suite.problem)

    def post_for_suite(
        self,
        trigger: Trigger,
        suite: str,
        state: State,
        description: str,
        *,
        awaiting_approval: bool = False,
    ) -> bool:
        """A status under a suite's context for a commit that has no run of it (a check
        run waiting for approval is `action_required`, linking the pull request)."""
        details = None
        if awaiting_approval:
            details = f"{self.web_url.rstrip('/')}/{trigger.repo}/pull/{trigger.pull_request}"
        return self.reporter.for_suite(trigger, suite, state, description, details)

    def compare(self, trigger: Trigger) -> Comparison | None:
        """GitHub's compare of the commit the trigger's change is counted from (a pull
        request's base, a push's previous head) with its commit; None when there is none."""
        base = trigger.compared_from
        if base is None:
            return None
        comparison = self.github.compare(trigger.repo, base, trigger.sha)
        if comparison.files is None:
            logger.info("changed files unknown: every suite runs", extra={"sha": trigger.sha})
        return comparison

    def parents(self, trigger: Trigger) -> tuple[str, ...] | str:
        """The parents of the trigger's commit, first parent first, or why GitHub did not
        say (logged and counted)."""
        try:
            return self.github.commit_parents(trigger.repo, trigger.sha)
        except GitHubError as exc:
            logger.error("commit's parents unknown", extra={"sha": trigger.sha, "error": str(exc)})
            self.count("CommitLookupFailures")
            return str(exc)

    def bisected(self, run: RunRecord, bisection: Bisection) -> bool:
        """The pushed head's check run again, with how its bisection ended (a commit status
        has no room for it: nothing is posted)."""
        return not self.checks or self.current(run, bisection=bisection)

    def diagnosed(self, run: RunRecord, lines: list[str]) -> bool:
        """The run's check run again, with one line per diagnosed config (a commit status
        has no room for it: nothing is posted)."""
        return not self.checks or not lines or self.current(run, diagnosis=lines)

    def first_parent_line(self, repo: str, good: str, bad: str) -> tuple[Commit, ...] | NoLine:
        """The commits after ``good`` up to ``bad`` on bad's first-parent line, from GitHub's
        compare of good...bad, or why there is none (GitHub down counted)."""
        try:
            commits = self.github.compare_commits(repo, good, bad)
        except GitHubError as exc:
            logger.error("compare not answered", extra={"sha": bad, "error": str(exc)})
            self.count("CommitLookupFailures")
            return NoLine(f"GitHub's compare {good[:10]}...{bad[:10]}: {exc}")
        return first_parent_line(commits, good, bad)

    def withdraw_approval(self, trigger: Trigger, label: str) -> bool:
        """Take the approval label off the pull request (it was given to an earlier head)."""
        assert trigger.pull_request is not None
        try:
            self.github.remove_label(trigger.repo, trigger.pull_request, label)
        except GitHubError as exc:
            logger.error("approval label not removed", extra={"label": label, "error": str(exc)})
            self.count("LabelRemovalFailures")
            return False
        logger.info("stale approval label removed", extra={"label": label})
        return True
