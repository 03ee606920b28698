"""`--sha` as a person gives it: any git revision (`HEAD`, `main~2`, a short sha), or a unique
prefix of a stored run's sha where there is no repository to ask (AWS, the local state)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from distkpi_cli.commands.common import UsageError

FULL_SHA = re.compile(r"[0-9a-f]{40}")
SHA_PREFIX = re.compile(r"[0-9a-f]{4,39}")


def git_commit(rev: str, repository: Path) -> str | None:
    """The full sha of ``rev`` in ``repository``, or None (no such commit, no repository)."""
    if rev.startswith("-"):
        return None  # never an option to git
    try:
        parsed = subprocess.run(
            ["git", "-C", str(repository), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # no git
        return None
    sha = parsed.stdout.strip()
    return sha if parsed.returncode == 0 and FULL_SHA.fullmatch(sha) else None


def commit_of(rev: str, repository: Path, flag: str = "--sha") -> str:
    """``rev`` as a full sha of ``repository``; UsageError naming both when it is none."""
    sha = git_commit(rev, repository)
    if sha is None:
        raise UsageError(
            f"{flag} {rev}: not a commit of {repository}: give a revision (HEAD, a branch, "
            "HEAD~1) or a unique sha prefix"
        )
    return sha


def stored_sha(rev: str, stored: Callable[[], Iterable[str]], repository: Path) -> str:
    """``rev`` as a full sha: as given when it is one; a hex prefix that exactly one of the
    ``stored`` shas starts with; else what git makes of it in ``repository`` (the folder the
    command runs in). UsageError when it is ambiguous or names nothing."""
    rev = rev.strip()
    if FULL_SHA.fullmatch(rev):
        return rev
    if SHA_PREFIX.fullmatch(rev.lower()):
        matches = sorted({s for s in stored() if s.startswith(rev.lower())})
        if len(matches) > 1:
            shown = ", ".join(m[:12] for m in matches[:5])
            raise UsageError(f"--sha {rev}: ambiguous, the sha of runs {shown}: give more digits")
        if matches:
            return matches[0]
    sha = git_commit(rev, repository)
    if sha is None:
        raise UsageError(
            f"--sha {rev}: no stored run's sha starts with it and it is not a commit of "
            f"{repository.resolve()}: give a full sha, a unique prefix, or a revision run "
            "inside the repository"
        )
    return sha
