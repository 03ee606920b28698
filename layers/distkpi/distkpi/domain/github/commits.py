"""What GitHub's REST answers say of commits (a compare's merge base, a commit's parents),
and the commit a paired run measures its head against: a pull request's merge base with its
base branch, a push's first parent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from distkpi.domain.github.webhook import SHA, Trigger


@dataclass(frozen=True)
class Comparison:
    """GitHub's compare of base...head: the files it changes (None: GitHub cannot list them
    all, or did not answer) and the merge base (None: not said); ``problem`` says why GitHub
    gave no answer at all."""

    files: list[str] | None = None
    merge_base: str | None = None
    problem: str | None = None


def merge_base_of(answer: Any) -> str | None:
    """``merge_base_commit.sha`` of a compare answer, when it is a commit sha."""
    base = answer.get("merge_base_commit") if isinstance(answer, dict) else None
    sha = base.get("sha") if isinstance(base, dict) else None
    return sha if isinstance(sha, str) and SHA.fullmatch(sha) else None


def parents_of(answer: Any) -> tuple[str, ...] | None:
    """The shas of a commit answer's ``parents``, in order (the first parent first; none for
    a root commit); None when the answer lists no valid parents."""
    parents = answer.get("parents") if isinstance(answer, dict) else None
    if not isinstance(parents, list):
        return None
    shas = [p.get("sha") if isinstance(p, dict) else None for p in parents]
    if not all(isinstance(s, str) and SHA.fullmatch(s) for s in shas):
        return None
    return tuple(str(s) for s in shas)


@dataclass(frozen=True)
class NoBase:
    """Why a paired run has no commit to measure its head against: the run cannot start."""

    reason: str

    def __str__(self) -> str:
        return self.reason


def pull_request_base(trigger: Trigger, comparison: Comparison | None) -> str | NoBase:
    """A pull request's arm A: the merge base of its head and its base branch (from the
    compare of the base sha with the head), not the base branch's tip, which may have moved
    on since the head branched off."""
    if comparison is None:
        return NoBase(f"no base to pair with: the pull request of {trigger.sha[:10]} names none")
    if comparison.merge_base is not None:
        return comparison.merge_base
    why = comparison.problem or "its answer names no merge_base_commit"
    base = (trigger.base_sha or trigger.base_branch)[:10]
    return NoBase(f"no base to pair with: GitHub's compare {base}...{trigger.sha[:10]}: {why}")


def push_base(trigger: Trigger, parents: Sequence[str] | str) -> str | NoBase:
    """A push's arm A: the pushed head's first parent. ``parents`` as GitHub listed them, or
    why it could not."""
    if isinstance(parents, str):
        return NoBase(f"no base to pair with: the parent of {trigger.sha[:10]}: {parents}")
    if not parents:
        return NoBase(f"no base to pair with: {trigger.sha[:10]} is a root commit (no parent)")
    return parents[0]
