"""Accepting an intended regression (domain/github/acceptance.py): asked by a comment, the
check run's button or `distkpi accept`, allowed by GitHub's collaborator permission alone;
the run's status turns `success` saying who accepted and why, and so does the pull
request's comment; the run and its history keep it; when the accepted head merges, the
accepted configs' baseline starts anew on the target branch (an audited reset with the same
reason). Anyone else is told who may, and nothing changes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from aws_lambda_powertools import Logger

from distkpi.domain.github.acceptance import (
    COMMAND,
    MAY_ACCEPT,
    Acceptance,
    AcceptAsked,
    Merged,
    not_allowed_reply,
    to_accept,
)
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.records import ResetRecord, RunRecord, RunStatus
from distkpi.domain.untrusted import neutral
from distkpi.exceptions import GitHubError
from distkpi.services.ports import (
    Clock,
    Counter,
    Deliveries,
    GitHub,
    History,
    PullRequests,
    RunFolders,
    Runs,
    no_metrics,
    utcnow,
)
from distkpi.services.pr_comments import PullRequestComments
from distkpi.services.regressions import RegressionLedger
from distkpi.services.statuses import StatusPublisher

logger = Logger(child=True)


@dataclass(frozen=True)
class Answer:
    """What an ask came to: the runs accepted, or why none was (``refused``)."""

    accepted: tuple[str, ...] = ()
    refused: str | None = None
    duplicate: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"accepted": list(self.accepted), "refused": self.refused}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        return cls(tuple(data.get("accepted", ())), data.get("refused"))


@dataclass
class Acceptances:
    runs: Runs
    history: History
    pull_requests: PullRequests
    github: GitHub
    statuses: StatusPublisher
    deliveries: Deliveries
    ledger: RegressionLedger | None = None
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)
    comments: PullRequestComments | None = None  # a pull request's comment per suite
    store: RunFolders | None = None  # where a diagnosis job stored its diagnoses

    def asked(self, ask: AcceptAsked, delivery: str) -> Answer:
        """Accept what ``ask`` names, once per delivery (a redelivery is told so)."""
        done = self.deliveries.once(delivery, lambda: self._accept(ask).to_json())
        if done.repeat or done.answer is None:
            return Answer(duplicate=True)
        return Answer.from_json(done.answer)

    def _accept(self, ask: AcceptAsked) -> Answer:
        try:
            permission = self.github.collaborator_permission(ask.repo, ask.login)
        except GitHubError as exc:
            logger.error("permission not known", login=ask.login, error=str(exc))
            self.count("AcceptFailures")
            return Answer(refused=f"GitHub did not say @{ask.login}'s permission: {exc}")
        if permission not in MAY_ACCEPT:
            self.count("AcceptsRefused")
            logger.info("accept refused: permission", login=ask.login, permission=permission)
            return self._refuse(ask, not_allowed_reply(ask.login, ask.repo, permission))
        if not ask.reason:
            return self._refuse(
                ask, f"@{ask.login}: say why: `{COMMAND} <reason>`. Nothing changed."
            )
        runs = self._runs_asked(ask)
        if isinstance(runs, str):
            return self._refuse(ask, f"@{ask.login}: {runs}. Nothing changed.")
        return self._accept_runs(ask, runs)

    def _accept_runs(self, ask: AcceptAsked, runs: list[RunRecord]) -> Answer:
        """Every failed run's regressions, or none of them when one cannot be accepted."""
        chosen: list[tuple[RunRecord, tuple[tuple[str, str], ...]]] = []
        for run in runs:
            if run.status is not RunStatus.DONE or run.accepted is not None:
                continue
            tolerance = run.spec.accuracy_tolerance
            kpis, refused = to_accept(run.evaluation, tolerance, run.verdict_settings.acceptable)
            if refused is not None and kpis:
                return self._refuse(
                    ask,
                    f"@{ask.login}: distkpi/{run.model} cannot be accepted: {refused}. "
                    "Nothing changed.",
                )
            if refused is None:
                chosen.append((run, kpis))
        if not chosen:
            return self._refuse(
                ask, f"@{ask.login}: no failed distkpi run of this head to accept. Nothing changed."
            )
        at = self._now()
        accepted = [r.run_id for r, kpis in chosen if self._accept_run(ask, r, kpis, at)]
        self.count("RunsAccepted", len(accepted))
        logger.info("regressions accepted", runs=accepted, login=ask.login, via=ask.via.value)
        if accepted:
            self._reply(ask, self._accepted_text(ask, [r for r, _ in chosen]))
        return Answer(tuple(accepted))

    def _accept_run(
        self, ask: AcceptAsked, run: RunRecord, kpis: tuple[tuple[str, str], ...], at: str
    ) -> bool:
        acceptance = Acceptance(ask.login, at, ask.reason, ask.via, kpis)
        if not self.runs.accept(run.run_id, acceptance):
            return False  # accepted meanwhile: the first acceptance stands
        run = replace(run, accepted=acceptance)
        if run.published_at is not None:
            self.history.accept(run, acceptance)
        assert run.evaluation is not None
        commented = self.comments is not None and run.trigger.pull_request is not None
        lines = self._diagnosis_lines(run) if commented or self.statuses.checks else []
        self.statuses.current(run, diagnosis=lines)
        if self.comments is not None:
            # `success`, who accepted it and why, the lines of its diagnosis job kept
            self.comments.after(run, report=True, diagnoses=lines)
        if run.trigger.of_branch:  # on the branch itself: its new level starts now
            self._new_level(run, run.trigger.branch)
            if self.ledger is not None:
                self.ledger.accepted(run, acceptance)
        return True

    def _diagnosis_lines(self, run: RunRecord) -> list[str]:
        """The run's diagnosis lines, read once for its check run and its comment."""
        from distkpi.services.check_sections import stored_diagnosis_lines

        return [] if self.store is None else stored_diagnosis_lines(self.store, run)

    def merged(self, merge: Merged) -> list[str]:
        """A pull request merged: its accepted runs of the merged head start their
        configs' new baseline level on the target branch. The runs whose level started."""
        if merge.pull_request is None:
            return []
        found = self.pull_requests.runs(merge.repo, merge.pull_request)
        runs = [self.runs.get(p.run_id) for p in found if p.sha == merge.head_sha]
        return self._merged(merge.repo, merge.base_branch, merge.merge_sha, runs)

    def pushed(self, trigger: Trigger) -> list[str]:
        """A push to a configured branch whose head is a pull request's accepted head (a
        fast-forward merge) starts that run's new level there."""
        runs = [
            r
            for r in self.runs.of_commit(trigger.repo, trigger.sha)
            if r.trigger.event == "pull_request" and r.trigger.base_branch == trigger.branch
        ]
        return self._merged(trigger.repo, trigger.branch, trigger.sha, runs)

    def _merged(
        self, repo: str, branch: str, sha: str, runs: Iterable[RunRecord | None]
    ) -> list[str]:
        started = []
        for run in runs:
            if run is None or run.accepted is None or run.trigger.repo != repo:
                continue
            if self._new_level(run, branch):
                started.append(run.run_id)
        if started:
            self.count("AcceptedMerged", len(started))
            logger.info("accepted runs merged: baseline starts anew", runs=started, sha=sha)
        return started

    def _new_level(self, run: RunRecord, branch: str) -> bool:
        """An audited reset of each accepted config on ``branch``, now, with the accept's
        reason, unless one was made for this acceptance already (a merge is known twice)."""
        acceptance = run.accepted
        assert acceptance is not None
        who = f"@{acceptance.login}"
        made = {
            r.config
            for r in self.history.resets(run.trigger.repo, branch, run.model)
            if r.who == who and r.reason == acceptance.reason and r.at >= acceptance.at
        }
        configs = [c for c in acceptance.configs if c not in made]
        at = self._now()
        for config in configs:
            reset = ResetRecord(
                run.trigger.repo, branch, run.model, config, acceptance.reason, who, at
            )
            self.history.record_reset(reset)
        return bool(configs)

    def _runs_asked(self, ask: AcceptAsked) -> list[RunRecord] | str:
        """The run named, or the runs of the pull request's newest head (the latest run of
        each suite there); a text saying why there are none."""
        if ask.run_id is not None:
            run = self.runs.get(ask.run_id)
            if run is None or run.trigger.repo != ask.repo:
                return f"there is no distkpi run {neutral(ask.run_id)} of {ask.repo}"
            return [run]
        assert ask.pull_request is not None
        found = self.pull_requests.runs(ask.repo, ask.pull_request)
        if not found:
            return "distkpi has run nothing for this pull request"
        newest = max(found, key=lambda p: (p.updated_at, p.created_at))
        latest: dict[str, str] = {}
        for p in sorted(found, key=lambda p: p.created_at):
            if p.sha == newest.sha:
                latest[p.model] = p.run_id
        return [r for r in (self.runs.get(i) for i in latest.values()) if r is not None]

    def _accepted_text(self, ask: AcceptAsked, runs: list[RunRecord]) -> str:
        suites = ", ".join(f"distkpi/{r.model}" for r in runs)
        sha = runs[0].trigger.sha[:10]
        return (
            f"Accepted by @{ask.login} for {suites} at {sha}: "
            f"{neutral(ask.reason, markdown=True)}\n\n"
            "This covers this head only: a new push is judged afresh. When it merges, the "
            "accepted configs' baseline starts anew on the target branch."
        )

    def _refuse(self, ask: AcceptAsked, text: str) -> Answer:
        self._reply(ask, text)
        return Answer(refused=text)

    def _reply(self, ask: AcceptAsked, text: str) -> None:
        """A comment on the pull request, when the ask came from one; a GitHub that is down
        is logged and counted (the answer stands)."""
        if ask.pull_request is None:
            return
        try:
            self.github.create_issue_comment(ask.repo, ask.pull_request, text)
        except GitHubError as exc:
            logger.error("reply not posted", error=str(exc))
            self.count("CommentFailures")

    def _now(self) -> str:
        return self.clock().isoformat(timespec="seconds")
