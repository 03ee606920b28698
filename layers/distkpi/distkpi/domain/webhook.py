"""What a GitHub webhook delivery asks for: its signature, and whether it starts runs."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

PR_ACTIONS = frozenset({"opened", "synchronize", "reopened"})


def signature_matches(secret: bytes, body: bytes, header: str | None) -> bool:
    """X-Hub-Signature-256 check: HMAC-SHA256 of the raw body, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


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


@dataclass(frozen=True)
class Ignored:
    reason: str


def _dig(payload: Mapping[str, Any], *path: str) -> Any:
    node: Any = payload
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _pull_request(payload: Mapping[str, Any]) -> Trigger | Ignored:
    action = payload.get("action")
    if action not in PR_ACTIONS:
        return Ignored(f"pull_request action {action!r} does not start runs")
    repo, sha = (
        _dig(payload, "repository", "full_name"),
        _dig(payload, "pull_request", "head", "sha"),
    )
    head_ref = _dig(payload, "pull_request", "head", "ref")
    base_ref = _dig(payload, "pull_request", "base", "ref")
    if not all(isinstance(v, str) for v in (repo, sha, head_ref, base_ref)):
        return Ignored("pull_request payload lacks repository, head or base")
    number = payload.get("number")
    return Trigger(
        repo=repo,
        sha=sha,
        ref=f"refs/pull/{number}/head" if isinstance(number, int) else f"refs/heads/{head_ref}",
        branch=head_ref,
        event="pull_request",
        base_branch=base_ref,
        base_sha=_dig(payload, "pull_request", "base", "sha"),
        pull_request=number if isinstance(number, int) else None,
        updated_at=_text(_dig(payload, "pull_request", "updated_at")),
    )


def _push(payload: Mapping[str, Any], branches: Collection[str]) -> Trigger | Ignored:
    ref, repo, sha = (
        payload.get("ref"),
        _dig(payload, "repository", "full_name"),
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
    return Trigger(repo=repo, sha=sha, ref=ref, branch=branch, event="push", base_branch=branch)


def decide(event: str, payload: Mapping[str, Any], branches: Collection[str]) -> Trigger | Ignored:
    """Whether a delivery (already authenticated) starts runs, and for which commit."""
    if event == "pull_request":
        return _pull_request(payload)
    if event == "push":
        return _push(payload, branches)
    return Ignored(f"event {event!r} does not start runs")
