"""What a GitHub webhook delivery asks for: its signature, and whether it starts runs."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distkpi.domain.github.acceptance import (
    ACCEPT_EVENT_TYPE,
    ACTION_ID,
    BUTTON_REASON,
    MAX_REASON,
    AcceptAsked,
    Merged,
    Via,
    reason_of_comment,
)
from distkpi.domain.github.events import (
    CheckRun,
    CheckRunEvent,
    CheckSuite,
    CheckSuiteEvent,
    GitHubEvent,
    IssueCommentEvent,
    OtherEvent,
    PullRequest,
    PullRequestEvent,
    PushEvent,
    RepositoryDispatchEvent,
)

# what may start runs for the head (domain/github/trust.py decides whether they do)
PR_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review", "labeled"})
SHA = re.compile(r"[0-9a-f]{40}")
FULL_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
MAX_NUMBER = 2**31 - 1  # GitHub's issue and pull request numbers are 32-bit
MAX_REF_BYTES = 255


def signature_matches(secret: bytes, body: bytes, header: str | None) -> bool:
    """X-Hub-Signature-256 check: HMAC-SHA256 of the raw body, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    return hmac.compare_digest(sign(secret, body).encode(), header.strip().encode())


def sign(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Trigger:
    """A commit to evaluate, and the history it should be judged against."""

    repo: str
    sha: str
    ref: str
    branch: str
    event: str
    base_branch: str
    base_sha: str | None = None
    pull_request: int | None = None
    # when GitHub last changed the pull request: orders pushes whose deliveries cross
    updated_at: str | None = None
    # a push's previous head: what its changed files are counted from (path filters)
    before: str | None = None
    # a pull request's labels when it was delivered: which configs run (a suite's `when:`)
    labels: tuple[str, ...] = ()
    # who wrote it: a push's head commit's author, a pull request's opener (the history
    # site shows it); not part of what the trigger is
    author: str | None = dataclasses.field(default=None, compare=False)

    @property
    def of_branch(self) -> bool:
        """A branch's own head measured: a push, or the schedule's run of the default
        branch. Its regressions are the branch's (alerted, kept, bisected), where a pull
        request's are its own."""
        return self.event in ("push", "schedule")

    @property
    def compared_from(self) -> str | None:
        """The commit whose difference to this one says which files changed."""
        return self.base_sha if self.event == "pull_request" else self.before


@dataclass(frozen=True)
class Rerun:
    """Someone pressed "Re-run" on a distkpi check (check_run) or on the App's whole check
    suite (check_suite): new runs of those suites (None: every suite) at that commit."""

    trigger: Trigger
    suites: tuple[str, ...] | None
    # the run whose check was re-requested (the check run's external id), when known
    previous: str | None = None


CHECK_PREFIX = "distkpi/"
# `distkpi calibrate --start` asks GitHub for a repository_dispatch event of this type
CALIBRATE_EVENT_TYPE = "distkpi-calibrate"
CALIBRATION_EVENT = "repository_dispatch"
MAX_CALIBRATION_JOBS = 20
# where each event holds the commit it would run
SHA_FIELDS = {"pull_request": "pull_request.head.sha", CALIBRATION_EVENT: "client_payload.sha"}


@dataclass(frozen=True)
class Calibrate:
    """A/A jobs asked for (`distkpi calibrate --start`): ``jobs`` paired runs of the suite
    ``model`` with the commit in both arms, their history under the trigger's branch."""

    trigger: Trigger
    model: str
    jobs: int


@dataclass(frozen=True)
class Ignored:
    reason: str


@dataclass(frozen=True)
class Invalid:
    """A signed delivery that is not what GitHub sends: which field, and why."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


def _invalid_field(trigger: Trigger) -> Invalid | None:
    """The first field of a trigger that GitHub would never send, else None."""
    if not FULL_NAME.fullmatch(trigger.repo):
        return Invalid("repository.full_name", "not owner/name")
    sha_field = SHA_FIELDS.get(trigger.event, "after")
    if not SHA.fullmatch(trigger.sha):
        return Invalid(sha_field, "not a 40-digit lower-case hex commit sha")
    if trigger.base_sha is not None and not SHA.fullmatch(trigger.base_sha):
        return Invalid("pull_request.base.sha", "not a 40-digit lower-case hex commit sha")
    refs = {"pull_request.head.ref": trigger.branch, "pull_request.base.ref": trigger.base_branch}
    if trigger.event == CALIBRATION_EVENT:
        refs = {"client_payload.branch": trigger.branch}
    elif trigger.event != "pull_request":
        refs = {"ref": trigger.ref}
    for field, ref in refs.items():
        if len(ref.encode()) > MAX_REF_BYTES or any(ord(c) < 32 for c in ref):
            return Invalid(
                field, f"not a git ref (control characters, or over {MAX_REF_BYTES} bytes)"
            )
    return None


def _number(number: int | None, field: str) -> int | Invalid:
    if number is None or not 0 < number <= MAX_NUMBER:
        return Invalid(field, f"not a pull request number (1 to {MAX_NUMBER})")
    return number


def _pull_request(event: PullRequestEvent) -> Trigger | Merged | Ignored | Invalid:
    if event.action == "closed" and event.pull_request and event.pull_request.merged:
        return _merged(event)
    if event.action not in PR_ACTIONS:
        return Ignored(f"pull_request action {event.action!r} does not start runs")
    pull = event.pull_request
    head, base = (pull.head, pull.base) if pull else (None, None)
    repo, sha = event.repo, head.sha if head else None
    head_ref, base_ref = head.ref if head else None, base.ref if base else None
    if repo is None or sha is None or head_ref is None or base_ref is None:
        return Ignored("pull_request payload lacks repository, head or base")
    number = _number(event.number, "number")
    if isinstance(number, Invalid):
        return number
    return Trigger(
        repo=repo,
        sha=sha,
        ref=f"refs/pull/{number}/head",
        branch=head_ref,
        event="pull_request",
        base_branch=base_ref,
        base_sha=base.sha if base else None,
        pull_request=number,
        updated_at=pull.updated_at if pull else None,
        labels=tuple(label.name for label in pull.labels) if pull else (),
        author=pull.user.login if pull and pull.user else None,
    )


def _merged(event: PullRequestEvent) -> Merged | Ignored | Invalid:
    """A pull request's `closed` delivery with ``merged`` true: its head, and the commit
    the merge made (``merge_commit_sha``: the squash or merge commit, or the head itself)."""
    pull = event.pull_request
    assert pull is not None
    repo, head, base = event.repo, pull.head, pull.base
    head_sha, merge_sha = (head.sha if head else None), pull.merge_commit_sha
    base_ref = base.ref if base else None
    if repo is None or head_sha is None or merge_sha is None or base_ref is None:
        return Ignored("merged pull_request payload lacks repository, head, base or merge commit")
    fields = (("pull_request.head.sha", head_sha), ("pull_request.merge_commit_sha", merge_sha))
    for name, sha in fields:
        if not SHA.fullmatch(sha):
            return Invalid(name, "not a 40-digit lower-case hex commit sha")
    number = _number(event.number, "number")
    if isinstance(number, Invalid):
        return number
    return Merged(repo, base_ref, head_sha, merge_sha, number)


def _issue_comment(event: IssueCommentEvent) -> AcceptAsked | Ignored | Invalid:
    """`/distkpi accept <reason>` commented on a pull request."""
    if event.action != "created":
        return Ignored(f"issue_comment action {event.action!r} asks nothing")
    issue, comment = event.issue, event.comment
    if issue is None or issue.pull_request is None:
        return Ignored("issue_comment on an issue, not a pull request")
    reason = reason_of_comment(comment.body if comment else None)
    if reason is None:
        return Ignored("issue_comment is not a /distkpi accept command")
    login = comment.user.login if comment and comment.user else event.actor
    if event.repo is None or login is None:
        return Ignored("issue_comment payload lacks repository or the comment's author")
    number = _number(issue.number, "issue.number")
    if isinstance(number, Invalid):
        return number
    return AcceptAsked(event.repo, login, reason, Via.COMMENT, pull_request=number)


def _push(event: PushEvent, branches: Collection[str]) -> Trigger | Ignored | Invalid:
    ref, repo, sha = event.ref, event.repo, event.after
    if ref is None or repo is None or sha is None:
        return Ignored("push payload lacks ref, repository or after")
    if not ref.startswith("refs/heads/"):
        return Ignored(f"push to {ref} is not a branch")
    branch = ref.removeprefix("refs/heads/")
    if branch not in branches:
        return Ignored(f"push to branch {branch!r} is not configured")
    if event.deleted or set(sha) == {"0"}:
        return Ignored(f"branch {branch!r} was deleted")
    before = event.before
    if before is not None and (not SHA.fullmatch(before) or set(before) == {"0"}):
        before = None  # a new branch has no previous head
    return Trigger(
        repo=repo,
        sha=sha,
        ref=ref,
        branch=branch,
        event="push",
        base_branch=branch,
        before=before,
        author=event.author,
    )


def _check_run(
    event: CheckRunEvent, branches: Collection[str], app_id: str | None
) -> Rerun | AcceptAsked | Ignored | Invalid:
    check = event.check_run
    if event.action == "requested_action":
        return _accept_pressed(event, app_id)
    refused = _rerun_refusal("check_run", event.action, check, app_id)
    if refused is not None:
        return refused
    assert check is not None
    name = check.name
    if name is None or not name.startswith(CHECK_PREFIX):
        return Ignored(f"check run {name!r} is not a distkpi suite's")
    suite = check.check_suite or CheckSuite()
    pulls = check.pull_requests or suite.pull_requests
    trigger = _rerun_trigger(event.repo, check.head_sha, suite.head_branch, pulls, branches)
    if isinstance(trigger, Ignored):
        return Ignored(f"check_run {trigger.reason}")
    if isinstance(trigger, Invalid):
        return Invalid(f"check_run.{trigger.field}", trigger.reason)
    return Rerun(trigger, (name.removeprefix(CHECK_PREFIX),), check.external_id)


def _accept_pressed(event: CheckRunEvent, app_id: str | None) -> AcceptAsked | Ignored:
    """The "Accept regression" button of one of the App's own distkpi check runs: its run
    (the check run's external id), and its pull request when GitHub names one."""
    check = event.check_run
    if check is None:
        return Ignored("check_run payload lacks check_run")
    app = check.app.id if check.app else None
    if app_id is None or str(app) != app_id:
        return Ignored("check_run of another App")
    action = event.requested_action.identifier if event.requested_action else None
    if action != ACTION_ID:
        return Ignored(f"check_run requested action {action!r} is not distkpi's")
    name = check.name
    if name is None or not name.startswith(CHECK_PREFIX) or not check.external_id:
        return Ignored(f"check run {name!r} is not a distkpi run's")
    if event.repo is None or event.actor is None:
        return Ignored("check_run payload lacks repository or sender")
    pulls = check.pull_requests or (check.check_suite.pull_requests if check.check_suite else [])
    number = pulls[0].number if pulls else None
    return AcceptAsked(
        event.repo,
        event.actor,
        BUTTON_REASON,
        Via.CHECK_RUN,
        pull_request=number,
        run_id=check.external_id,
    )


def _check_suite(
    event: CheckSuiteEvent, branches: Collection[str], app_id: str | None
) -> Rerun | Ignored | Invalid:
    suite = event.check_suite
    refused = _rerun_refusal("check_suite", event.action, suite, app_id)
    if refused is not None:
        return refused
    assert suite is not None
    trigger = _rerun_trigger(
        event.repo, suite.head_sha, suite.head_branch, suite.pull_requests, branches
    )
    if isinstance(trigger, Ignored):
        return Ignored(f"check_suite {trigger.reason}")
    if isinstance(trigger, Invalid):
        return Invalid(f"check_suite.{trigger.field}", trigger.reason)
    return Rerun(trigger, None)


def _rerun_refusal(
    event: str, action: str | None, check: CheckRun | CheckSuite | None, app_id: str | None
) -> Ignored | None:
    """Why a check_run or check_suite delivery re-runs nothing, else None."""
    if action != "rerequested":
        return Ignored(f"{event} action {action!r} starts nothing")
    if check is None:
        return Ignored(f"{event} payload lacks {event}")
    app = check.app.id if check.app else None
    if app_id is None or str(app) != app_id:
        return Ignored(f"{event} of another App")
    return None


def _rerun_trigger(
    repo: str | None,
    sha: str | None,
    branch: str | None,
    pulls: Sequence[PullRequest],
    branches: Collection[str],
) -> Trigger | Ignored | Invalid:
    """The commit a check (suite) was for: its pull request's, else its branch's push."""
    if repo is None or sha is None or branch is None:
        return Ignored("payload lacks repository, head_sha or head_branch")
    pull = pulls[0] if pulls else None
    base = pull.base if pull else None
    if pull is not None and base is not None and base.ref is not None:
        number = _number(pull.number, "pull_requests[0].number")
        if isinstance(number, Invalid):
            return number
        return Trigger(
            repo=repo,
            sha=sha,
            ref=f"refs/pull/{number}/head",
            branch=branch,
            event="pull_request",
            base_branch=base.ref,
            base_sha=base.sha,
            pull_request=number,
        )
    if branch in branches:
        return Trigger(repo, sha, f"refs/heads/{branch}", branch, "push", branch)
    return Ignored(f"on branch {branch!r}, neither a pull request's nor configured")


def _dispatched(
    event: RepositoryDispatchEvent, branches: Collection[str]
) -> Calibrate | AcceptAsked | Ignored | Invalid:
    """A repository_dispatch: a calibration, or `distkpi accept`'s."""
    if event.action == ACCEPT_EVENT_TYPE:
        return _accept_dispatched(event)
    return _calibration(event, branches)


def _accept_dispatched(event: RepositoryDispatchEvent) -> AcceptAsked | Ignored | Invalid:
    """`distkpi accept RUN_ID --reason TEXT`: GitHub names the token's user as the sender."""
    if event.repo is None or event.actor is None:
        return Ignored("repository_dispatch payload lacks repository or sender")
    asked = event.client_payload
    if not isinstance(asked, Mapping):
        return Invalid("client_payload", "not an object with run_id and reason")
    run_id, reason = asked.get("run_id"), asked.get("reason")
    if not isinstance(run_id, str) or not run_id or len(run_id) > MAX_REF_BYTES:
        return Invalid("client_payload.run_id", "not a run id")
    if not isinstance(reason, str):
        return Invalid("client_payload.reason", "not a text")
    reason = reason.strip()[:MAX_REASON]
    return AcceptAsked(event.repo, event.actor, reason, Via.COMMAND, run_id=run_id)


def _calibration(
    event: RepositoryDispatchEvent, branches: Collection[str]
) -> Calibrate | Ignored | Invalid:
    """A repository_dispatch of type distkpi-calibrate: GitHub puts the type in ``action``
    and what `distkpi calibrate --start` posted in ``client_payload``."""
    if event.action != CALIBRATE_EVENT_TYPE:
        return Ignored(f"repository_dispatch {event.action!r} is not {CALIBRATE_EVENT_TYPE!r}")
    repo = event.repo
    if repo is None:
        return Ignored("repository_dispatch payload lacks repository")
    asked = _asked(event.client_payload)
    if isinstance(asked, Invalid):
        return asked
    sha, model, jobs, branch = asked
    if branch not in branches:
        return Ignored(f"calibration for branch {branch!r}, which is not configured")
    trigger = Trigger(repo, sha, f"refs/heads/{branch}", branch, CALIBRATION_EVENT, branch)
    return Calibrate(trigger, model, jobs)


def _asked(asked: Any) -> tuple[str, str, int, str] | Invalid:
    """client_payload's sha, model, jobs and branch, or the first that is not one."""
    if not isinstance(asked, Mapping):
        return Invalid("client_payload", "not an object with sha, model, jobs and branch")
    sha, model, jobs, branch = (asked.get(k) for k in ("sha", "model", "jobs", "branch"))
    if not isinstance(sha, str) or not SHA.fullmatch(sha):
        return Invalid("client_payload.sha", "not a 40-digit lower-case hex commit sha")
    if not isinstance(model, str) or not model:
        return Invalid("client_payload.model", "not a suite name")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 0 < jobs <= MAX_CALIBRATION_JOBS:
        return Invalid("client_payload.jobs", f"not a number of jobs (1 to {MAX_CALIBRATION_JOBS})")
    if not isinstance(branch, str) or not branch:
        return Invalid("client_payload.branch", "not a branch name")
    return sha, model, jobs, branch


Decision = Trigger | Rerun | Calibrate | AcceptAsked | Merged | Ignored | Invalid


@dataclass(frozen=True)
class Route:
    """An event the stack takes: its model, and what a delivery of it asks for (given the
    configured branches and the stack's App id)."""

    model: type[GitHubEvent]
    decide: Callable[[Any, Collection[str], str | None], Decision]


# The one dispatch table: adding an event is a model (events.py) and a route here.
ROUTES: dict[str, Route] = {
    "pull_request": Route(PullRequestEvent, lambda e, _b, _a: _pull_request(e)),
    "push": Route(PushEvent, lambda e, b, _a: _push(e, b)),
    "check_run": Route(CheckRunEvent, _check_run),
    "check_suite": Route(CheckSuiteEvent, _check_suite),
    CALIBRATION_EVENT: Route(RepositoryDispatchEvent, lambda e, b, _a: _dispatched(e, b)),
    "issue_comment": Route(IssueCommentEvent, lambda e, _b, _a: _issue_comment(e)),
}
# the events that ask for the App's id (a secret read), to see that the checks are its own
RERUN_EVENTS = frozenset({"check_run", "check_suite"})


def parse(event: str, payload: Mapping[str, Any]) -> GitHubEvent:
    """A delivery's JSON object as the model of its event (X-GitHub-Event); never raises."""
    route = ROUTES.get(event)
    if route is None:
        return OtherEvent.model_validate({**payload, "name": event})
    return route.model.model_validate(payload)


def decide(event: GitHubEvent, branches: Collection[str], app_id: str | None = None) -> Decision:
    """Whether a delivery (already authenticated) starts runs, and for which commit; Invalid
    for one that would start runs but holds what GitHub never sends. Re-runs are asked of
    the App (``app_id``) only for its own checks; calibrations by a repository_dispatch."""
    route = next((r for r in ROUTES.values() if type(event) is r.model), None)
    if route is None:
        name = event.name if isinstance(event, OtherEvent) else type(event).__name__
        return Ignored(f"event {name!r} does not start runs")
    decided = route.decide(event, branches, app_id)
    if isinstance(decided, AcceptAsked | Merged) and not FULL_NAME.fullmatch(decided.repo):
        return Invalid("repository.full_name", "not owner/name")
    trigger = decided.trigger if isinstance(decided, Rerun | Calibrate) else decided
    if isinstance(trigger, Trigger):
        return _invalid_field(trigger) or decided
    return decided
