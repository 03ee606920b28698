"""The commits a bisection searches: the first-parent line from the bad commit back to the
good one, as GitHub's compare of good...bad lists them (`commits`, each with its `parents`).
A merge is one step on that line: the commits it brought in are not searched one by one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from distkpi.domain.github.webhook import SHA


@dataclass(frozen=True)
class Commit:
    """A commit of the line, as a person is told of it."""

    sha: str
    author: str
    title: str
    # the author's GitHub account, when GitHub knows it (alerts mention it); not what makes
    # two commits the same
    login: str = field(default="", compare=False)

    def to_json(self) -> dict[str, str]:
        kept = {"sha": self.sha, "author": self.author, "title": self.title}
        return {**kept, "login": self.login} if self.login else kept

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Commit:
        return cls(
            str(data["sha"]),
            str(data.get("author", "")),
            str(data.get("title", "")),
            str(data.get("login", "")),
        )


@dataclass(frozen=True)
class NoLine:
    """Why the compare answer gives no line from the bad commit back to the good one."""

    reason: str

    def __str__(self) -> str:
        return self.reason


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _commit(entry: dict[str, Any]) -> Commit:
    details = _dict(entry.get("commit"))
    message = details.get("message")
    login = _dict(entry.get("author")).get("login")
    name = _dict(details.get("author")).get("name") or login
    title = message.split("\n", 1)[0] if isinstance(message, str) else ""
    return Commit(str(entry["sha"]), str(name or ""), title, str(login or ""))


def _first_parents(commits: Sequence[Any]) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """sha -> (its first parent's sha, or None for a root; the entry), valid entries only."""
    out: dict[str, tuple[str | None, dict[str, Any]]] = {}
    for entry in commits:
        if not isinstance(entry, dict) or not isinstance(entry.get("sha"), str):
            continue
        if not SHA.fullmatch(entry["sha"]) or not isinstance(entry.get("parents"), list):
            continue
        parents = entry["parents"]
        first = parents[0].get("sha") if parents and isinstance(parents[0], dict) else None
        if parents and not (isinstance(first, str) and SHA.fullmatch(first)):
            continue
        out[entry["sha"]] = (first, entry)
    return out


def first_parent_line(commits: Sequence[Any], good: str, bad: str) -> tuple[Commit, ...] | NoLine:
    """The commits after ``good`` up to ``bad`` on bad's first-parent line, oldest first
    (bad last), from a compare answer's ``commits``. NoLine when bad is not listed, or its
    line leaves the listed commits (good is no first-parent ancestor of bad, or GitHub cut
    the list short) without reaching good."""
    if good == bad:
        return NoLine(f"good and bad are one commit, {bad[:10]}")
    listed = _first_parents(commits)
    line: list[Commit] = []
    at: str | None = bad
    while at != good:
        if at is None or at not in listed:
            where = "a root commit" if at is None else f"{at[:10]}, which the compare omits"
            return NoLine(f"the first-parent line of {bad[:10]} reaches {where}, not {good[:10]}")
        parent, entry = listed[at]
        line.append(_commit(entry))
        at = parent
        if len(line) > len(listed):  # a cycle no real history has
            return NoLine(f"the compare's parents of {bad[:10]} go round in a cycle")
    return tuple(reversed(line))
