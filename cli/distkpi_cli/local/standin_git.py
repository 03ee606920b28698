"""What the GitHub stand-in answers from the git repository it serves, in GitHub's shapes:
a compare (`git merge-base`, the commits each side is ahead by and those of the head's side
with their parents, the files changed since the merge base) and a Git commit object (its
parents, first parent first)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

# a branch, tag or sha as a compare's range names it: nothing git could take for an option
REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")
# a commit's tree, parents, author, committer and message, NUL-separated
COMMIT_FORMAT = "%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"
UNSIGNED = {"verified": False, "reason": "unsigned", "signature": None, "payload": None}
MAX_COMMITS = 250  # GitHub's compare lists at most this many commits
GIT_STATUSES = {"A": "added", "D": "removed", "M": "modified", "T": "changed"}


class GitRepository:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _git(self, *args: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, check=False
        )
        return done.stdout if done.returncode == 0 else None

    def commit_of(self, ref: str) -> str | None:
        if not REF.fullmatch(ref):
            return None
        found = self._git(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
        )
        return found.strip() if found else None

    def file_at(self, ref: str, path: str) -> str | None:
        """A file's text at commit ``ref`` (None: no such commit or file)."""
        sha = self.commit_of(ref)
        if sha is None or path.startswith(("-", "/")) or ".." in path.split("/"):
            return None
        return self._git("show", f"{sha}:{path}")

    def compare(self, base_ref: str, head_ref: str, files: list[dict[str, Any]] | None) -> Any:
        """GET /repos/{o}/{r}/compare/{base}...{head}, or None where GitHub answers 404 (an
        unknown commit, or no common ancestor). ``files``: listed as given instead of git's."""
        base, head = self.commit_of(base_ref), self.commit_of(head_ref)
        if base is None or head is None:
            return None
        merge_base = (self._git("merge-base", base, head) or "").strip()
        if not merge_base:
            return None
        ahead = int(self._git("rev-list", "--count", f"{merge_base}..{head}") or 0)
        behind = int(self._git("rev-list", "--count", f"{merge_base}..{base}") or 0)
        status = {(0, 0): "identical", (1, 0): "ahead", (0, 1): "behind", (1, 1): "diverged"}[
            (min(ahead, 1), min(behind, 1))
        ]
        return {
            "base_commit": {"sha": base},
            "merge_base_commit": {"sha": merge_base},
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": ahead,
            "commits": self._commits(merge_base, head),
            "files": files if files is not None else self._changed(merge_base, head),
        }

    def _commits(self, merge_base: str, head: str) -> list[dict[str, Any]]:
        """The commits after the merge base up to head, oldest first (GitHub's order: `git
        log --reverse`, at most 250), each with its parents, first parent first."""
        listed = self._git("rev-list", "--reverse", "--topo-order", f"{merge_base}..{head}") or ""
        out = []
        for sha in listed.split()[:MAX_COMMITS]:
            line = self._git("show", "-s", f"--format={COMMIT_FORMAT}", sha, "--") or ""
            _, parents, an, ae, ad, cn, ce, cd, message = line.split("\0", 8)
            out.append(
                {
                    "sha": sha,
                    "commit": {
                        "author": {"name": an, "email": ae, "date": ad},
                        "committer": {"name": cn, "email": ce, "date": cd},
                        "message": message.rstrip("\n"),
                    },
                    "parents": [{"sha": p} for p in parents.split()],
                }
            )
        return out

    def _changed(self, merge_base: str, head: str) -> list[dict[str, Any]]:
        """The files of ``git diff -M merge_base head`` as GitHub's compare lists them."""
        listed = self._git("diff", "--name-status", "-z", "-M", merge_base, head) or ""
        fields = listed.split("\0")
        entries, i = [], 0
        while i + 1 < len(fields):
            code = fields[i]
            if code.startswith(("R", "C")):
                old, new = fields[i + 1], fields[i + 2]
                status = "renamed" if code[0] == "R" else "copied"
                entries.append({"filename": new, "status": status, "previous_filename": old})
                i += 3
            else:
                entries.append(
                    {"filename": fields[i + 1], "status": GIT_STATUSES.get(code, "modified")}
                )
                i += 2
        return entries

    def git_commit(self, sha: str, api_url: str, repo: str) -> Any:
        """GET /repos/{o}/{r}/git/commits/{sha}, or None where GitHub answers 404."""
        line = self._git("show", "-s", f"--format={COMMIT_FORMAT}", f"{sha}^{{commit}}", "--")
        if line is None:
            return None
        tree, parents, an, ae, ad, cn, ce, cd, message = line.split("\0", 8)
        url = f"{api_url}/repos/{repo}/git/commits"
        return {
            "sha": sha,
            "url": f"{url}/{sha}",
            "author": {"name": an, "email": ae, "date": ad},
            "committer": {"name": cn, "email": ce, "date": cd},
            "tree": {"sha": tree, "url": f"{api_url}/repos/{repo}/git/trees/{tree}"},
            "message": message.rstrip("\n"),
            "parents": [{"sha": p, "url": f"{url}/{p}"} for p in parents.split()],
            "verification": UNSIGNED,
        }
