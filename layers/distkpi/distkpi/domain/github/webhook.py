"""What a GitHub webhook delivery asks for: its signature, and whether it starts runs."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

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
RERUN_EVENTS = frozenset({"check_run", "check_suite"})
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


def _number(payload: Mapping[str, Any]) -> int | Invalid:
    number = payload.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number <= MAX_NUMBER:
        return Invalid("number", f"not a pull request number (1 to {MAX_NUMBER})")
    return number


def dig(payload: Mapping[str, Any], *path: str) -> Any:
    """The value at ``path`` in nested objects, or None where any step is missing."""
    node: Any = payload
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _pull_request(payload: Mapping[str, Any]) -> Trigger | Ignored | Invalid:
    action = payload.get("action")
    if action not in PR_ACTIONS:
        return Ignored(f"pull_request action {action!r} does not start runs")
    repo, sha = (
        dig(payload, "repository", "full_name"),
        dig(payload, "pull_request", "head", "sha"),
    )
    head_ref = dig(payload, "pull_request", "head", "ref")
    base_ref = dig(payload, "pull_request", "base", "ref")
    if not all(isinstance(v, str) for v in (repo, sha, head_ref, base_ref)):
        return Ignored("pull_request payload lacks repository, head or base")
    number = _number(payload)
    if isinstance(number, Invalid):
        return number
    return Trigger(
        repo=repo,
        sha=sha,
        ref=f"refs/pull/{number}/head",
        branch=head_ref,
        event="pull_request",
        base_branch=base_ref,
        base_sha=_text(dig(payload, "pull_request", "base", "sha")),
        pull_request=number,
        updated_at=_text(dig(payload, "pull_request", "updated_at")),
    )


def _push(payload: Mapping[str, Any], branches: Collection[str]) -> Trigger | Ignored | Invalid:
    ref, repo, sha = (
        payload.get("ref"),
        dig(payload, "repository", "full_name"),
        payload.get("after"),
    )
    if not (isinstance(ref, str) and isinstance(repo, str) and isinstance(sha, str)):
        return Ignored("push payload lacks ref, repository or after")
    if not ref.startswith("refs/heads/"):
        return Ignored(f"push to {ref} is not a branch")
    branch = ref.removeprefix("refs/heads/")
    if branch not in branches:
        return Ignored(f"push to branch {branch!r} is not configured")
    if payload.get("deleted") or set(sha) == {"0"}:
        return Ignored(f"branch {branch!r} was deleted")
    before = _text(payload.get("before"))
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
    )


def _rerun(
    event: str, payload: Mapping[str, Any], branches: Collection[str], app_id: str | None
) -> Rerun | Ignored:
    if payload.get("action") != "rerequested":
        return Ignored(f"{event} action {payload.get('action')!r} starts nothing")
    check = payload.get(event)
    if not isinstance(check, Mapping):
        return Ignored(f"{event} payload lacks {event}")
    if app_id is None or str(dig(check, "app", "id")) != app_id:
        return Ignored(f"{event} of another App")
    suites: tuple[str, ...] | None = None
    previous, suite = None, check
    if event == "check_run":
        name = check.get("name")
        if not isinstance(name, str) or not name.startswith(CHECK_PREFIX):
            return Ignored(f"check run {name!r} is not a distkpi suite's")
        suites = (name.removeprefix(CHECK_PREFIX),)
        previous = _text(check.get("external_id"))
        suite = check.get("check_suite") or {}
    trigger = _rerun_trigger(payload, check, suite, branches)
    if isinstance(trigger, Ignored):
        return Ignored(f"{event} {trigger.reason}")
    return Rerun(trigger, suites, previous)


def _rerun_trigger(
    payload: Mapping[str, Any],
    check: Mapping[str, Any],
    suite: Mapping[str, Any],
    branches: Collection[str],
) -> Trigger | Ignored:
    """The commit a check (suite) was for: its pull request's, else its branch's push."""
    repo, sha = dig(payload, "repository", "full_name"), check.get("head_sha")
    branch = dig(suite, "head_branch")
    if not (isinstance(repo, str) and isinstance(sha, str) and isinstance(branch, str)):
        return Ignored("payload lacks repository, head_sha or head_branch")
    pulls = check.get("pull_requests") or dig(suite, "pull_requests") or []
    pull = pulls[0] if isinstance(pulls, list) and pulls else None
    base_ref = dig(pull, "base", "ref") if isinstance(pull, Mapping) else None
    if isinstance(pull, Mapping) and isinstance(base_ref, str):
        number = pull.get("number")
        return Trigger(
            repo=repo,
            sha=sha,
            ref=f"refs/pull/{number}/head",
            branch=branch,
            event="pull_request",
            base_branch=base_ref,
            base_sha=_text(dig(pull, "base", "sha")),
            pull_request=number if isinstance(number, int) else None,
        )
    if branch in branches:
        return Trigger(repo, sha, f"refs/heads/{branch}", branch, "push", branch)
    return Ignored(f"on branch {branch!r}, neither a pull request's nor configured")


def _calibration(
    payload: Mapping[str, Any], branches: Collection[str]
) -> Calibrate | Ignored | Invalid:
    """A repository_dispatch of type distkpi-calibrate: GitHub puts the type in ``action``
    and what `distkpi calibrate --start` posted in ``client_payload``."""
    action = payload.get("action")
    if action != CALIBRATE_EVENT_TYPE:
        return Ignored(f"repository_dispatch {action!r} is not {CALIBRATE_EVENT_TYPE!r}")
    repo = dig(payload, "repository", "full_name")
    if not isinstance(repo, str):
        return Ignored("repository_dispatch payload lacks repository")
    asked = _asked(payload.get("client_payload"))
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


def decide(
    event: str,
    payload: Mapping[str, Any],
    branches: Collection[str],
    app_id: str | None = None,
) -> Trigger | Rerun | Calibrate | Ignored | Invalid:
    """Whether a delivery (already authenticated) starts runs, and for which commit; Invalid
    for one that would start runs but holds what GitHub never sends. Re-runs are asked of
    the App (``app_id``) only for its own checks; calibrations by a repository_dispatch."""
    if event == "pull_request":
        decided: Trigger | Rerun | Calibrate | Ignored | Invalid = _pull_request(payload)
    elif event == "push":
        decided = _push(payload, branches)
    elif event in RERUN_EVENTS:
        decided = _rerun(event, payload, branches, app_id)
    elif event == CALIBRATION_EVENT:
        decided = _calibration(payload, branches)
    else:
        return Ignored(f"event {event!r} does not start runs")
    if isinstance(decided, Trigger):
        return _invalid_field(decided) or decided
    if isinstance(decided, Rerun | Calibrate):
        invalid = _invalid_field(decided.trigger)
        if invalid is not None:
            return invalid
    return decided
