"""A repository's CODEOWNERS, read as GitHub reads it ("About code owners"): the first of
`.github/CODEOWNERS`, `CODEOWNERS` and `docs/CODEOWNERS` that exists; one pattern and its
owners a line (`@login`, `@org/team` or an e-mail address), a word starting with `#`
starting a comment; gitignore's patterns, with GitHub's exceptions (no `\\#` escape, no `!`
negation, no `[ ]` ranges: such a line is skipped, as GitHub skips it; `dir/*` only the
files directly in `dir`); and the last matching line wins, a line without owners leaving
its paths without any.

A suite's owners (its `paths:` when it has them) are those of each path's literal folder,
the part before its first wildcard: `models/resnet/**` asks who owns `models/resnet`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

# where GitHub looks, in the order it looks
LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
# a login (`@octocat`, also without the `@`) or a team (`@org/team-name`)
OWNER_PATTERN = r"^@?[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9][A-Za-z0-9._-]*)?$"
_OWNER = re.compile(OWNER_PATTERN)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_WILDCARD = re.compile(r"[*?\[]")
_ANY_FILE = "\x00"  # a file name no pattern but a wildcard matches


@dataclass(frozen=True)
class Rule:
    pattern: str
    owners: tuple[str, ...]
    line: int

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(_translate(self.pattern))

    def matches(self, path: str) -> bool:
        return self.regex.fullmatch(path.strip("/")) is not None

    def matches_inside(self, folder: str) -> bool:
        """Whether it matches a file directly in ``folder``, or ``folder`` itself."""
        return self.matches(folder) or self.matches(f"{folder.strip('/')}/{_ANY_FILE}")


@dataclass(frozen=True)
class CodeOwners:
    rules: tuple[Rule, ...]
    problems: tuple[str, ...] = ()  # lines GitHub would reject, named by number

    def owners_of(self, path: str) -> tuple[str, ...]:
        """The owners of the file ``path`` (from the repository's root): the last matching
        line's, none when no line matches or it names none."""
        for rule in reversed(self.rules):
            if rule.matches(path):
                return rule.owners
        return ()

    def owners_of_folder(self, path: str) -> tuple[str, ...]:
        """The owners of ``path`` taken as a folder (or a file): the last line matching it or
        a file directly inside it."""
        for rule in reversed(self.rules):
            if rule.matches_inside(path):
                return rule.owners
        return ()


def parse(text: str) -> CodeOwners:
    rules: list[Rule] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = _fields(raw)
        if not fields:
            continue
        pattern, owners = fields[0], tuple(fields[1:])
        if pattern.startswith(("!", "\\#")) or "[" in pattern:
            problems.append(f"line {number}: GitHub does not support {pattern!r}")
            continue
        bad = [o for o in owners if not (_is_team_or_login(o) or _EMAIL.match(o))]
        if bad:
            problems.append(f"line {number}: not an owner: {', '.join(bad)}")
            owners = tuple(o for o in owners if o not in bad)
        rules.append(Rule(pattern, owners, number))
    return CodeOwners(tuple(rules), tuple(problems))


def mentions(owners: Iterable[str]) -> tuple[str, ...]:
    """Owners as chat and GitHub mention them: logins and teams with their `@`, e-mail
    addresses left out (they name no account anyone can mention), each once."""
    seen: dict[str, None] = {}
    for owner in owners:
        if _OWNER.match(owner):
            seen.setdefault(owner if owner.startswith("@") else f"@{owner}")
    return tuple(seen)


def probe_paths(paths: Sequence[str] | None) -> tuple[str, ...]:
    """The folders (or files) whose owners are a suite's: each of its `paths:` cut before
    its first wildcard, at a folder boundary; the whole repository when it has none."""
    if not paths:
        return ("",)
    probes: dict[str, None] = {}
    for pattern in paths:
        cut = _WILDCARD.search(pattern)
        literal = pattern if cut is None else pattern[: cut.start()].rpartition("/")[0]
        probes.setdefault(literal.strip("/"))
    return tuple(probes)


def owners_for(codeowners: CodeOwners, paths: Sequence[str] | None) -> tuple[str, ...]:
    """Every owner of a suite's probe paths, in the order found."""
    found: dict[str, None] = {}
    for probe in probe_paths(paths):
        for owner in codeowners.owners_of_folder(probe) if probe else _root_owners(codeowners):
            found.setdefault(owner)
    return tuple(found)


def _root_owners(codeowners: CodeOwners) -> tuple[str, ...]:
    """The repository as a whole: the last line that matches every path (`*`, `**`, `/**`)."""
    for rule in reversed(codeowners.rules):
        if rule.pattern.strip("/") in ("*", "**"):
            return rule.owners
    return ()


def _is_team_or_login(owner: str) -> bool:
    return owner.startswith("@") and _OWNER.match(owner) is not None


def _fields(line: str) -> list[str]:
    """A line's pattern and owners: whitespace-separated, up to a word starting with `#`."""
    fields: list[str] = []
    for word in line.split():
        if word.startswith("#"):
            break
        fields.append(word)
    return fields


def _translate(pattern: str) -> str:
    """A CODEOWNERS pattern as a regular expression over a path without leading `/`."""
    directory = pattern.endswith("/")
    body = pattern.strip("/")
    anchored = pattern.startswith("/") or "/" in body
    children_only = body.endswith("/*") and not body.endswith("**/*")
    parts = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif body.startswith("/**", i) and i + 3 == len(body):
            parts.append("/.*")
            i += 3
        elif body.startswith("**", i):
            parts.append(".*")
            i += 2
        elif body[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif body[i] == "?":
            parts.append("[^/]")
            i += 1
        else:
            parts.append(re.escape(body[i]))
            i += 1
    regex = "".join(parts)
    if not anchored:
        regex = "(?:.*/)?" + regex
    if directory:
        return regex + "/.*"  # only what is inside the folder
    if children_only:
        return regex
    return regex + "(?:/.*)?"  # the path itself, or anything inside it as a folder
