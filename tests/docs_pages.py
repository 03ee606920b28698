"""The commands the documentation shows, collected from its pages: each ```console block
of a tutorial or how-to guide carries a marker comment on the line before it,

    <!-- docs-test: run -->               run by make test, its output checked as it is
    <!-- docs-test: slow -->              run by make slow, its output checked
    <!-- docs-test: slow illustrative --> run by make slow; its output differs run to run
    <!-- docs-test: illustrative -->      shown only: it needs AWS, GitHub, a GPU or hours
    <!-- docs-test: file PATH -->         the fenced block after it is written to PATH

A page's blocks run in order, in one folder, each command in the folder the one before it
left. In a console block `$ ` starts a command; the lines up to the next are what it prints.
Output is compared line by line, runs of blanks made one, a line `...` standing for any
lines and `...` within a line for any text; a
slow block's with every number (and hex digest) masked too, since its timings and ids
differ between runs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# the pages whose commands a reader types: tutorials and how-to guides
PAGES = sorted([*DOCS.glob("tutorials/*.md"), *DOCS.glob("how-to/*.md")])
KINDS = ("run", "slow", "slow illustrative", "illustrative")
_MARKER = re.compile(r"^\s*<!-- docs-test: (.+?) -->\s*$")
_FENCE = re.compile(r"^(\s*)```(\S*)")


@dataclass
class Command:
    line: str
    output: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: Path
    lineno: int
    kind: str  # one of KINDS, or "file"
    language: str
    text: str
    path: str = ""  # a file block's

    @property
    def commands(self) -> list[Command]:
        out: list[Command] = []
        for line in self.text.splitlines():
            if line.startswith("$ "):
                out.append(Command(line[2:]))
            elif out:
                out[-1].output.append(line)
        return out

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.lineno}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with its marker's kind ("" when it has none)."""
    lines = page.read_text().splitlines()
    found, marker, i = [], "", 0
    while i < len(lines):
        m = _MARKER.match(lines[i])
        fence = _FENCE.match(lines[i])
        if m:
            marker = m.group(1)
        elif fence:
            indent, language = fence.groups()
            body, i = [], i + 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][len(indent) :])
                i += 1
            kind, _, path = (
                marker.partition(" ") if marker.startswith("file ") else (marker, "", "")
            )
            text = "\n".join(body) + "\n"
            found.append(Block(page, i - len(body), kind, language, text, path))
            marker = ""
        elif lines[i].strip():
            marker = ""
        i += 1
    return found


def mask(line: str, exact: bool = False) -> str:
    """A line with its blanks made one, and unless ``exact`` every number and hex digest
    as `#`."""
    text = line if exact else re.sub(r"[+-]?[0-9a-f.]*\d[0-9a-f.]*", "#", line)
    return " ".join(text.split())


def _same(wanted: list[str], lines: list[str]) -> bool:
    """Whether ``lines`` are ``wanted``, `...` within a wanted line standing for any text."""
    return len(wanted) == len(lines) and all(
        re.fullmatch(".*".join(map(re.escape, w.split("..."))), line) is not None
        for w, line in zip(wanted, lines, strict=True)
    )


def mismatch(shown: list[str], printed: str, exact: bool = False) -> str | None:
    """Why ``printed`` is not what the page shows (None when it is): the shown lines in
    order and adjacent, `...` standing for any lines, masked as `mask` says."""
    got = [mask(line, exact) for line in printed.splitlines() if line.strip()]
    want = [line.strip() for line in shown if line.strip()]
    segments: list[list[str]] = [[]]
    for line in want:
        if line == "...":
            segments.append([])
        else:
            segments[-1].append(mask(line, exact))
    at = 0
    for n, segment in enumerate(segments):
        if not segment:
            continue
        first = n == 0
        last = n == len(segments) - 1
        starts = [at] if first else range(at, len(got) - len(segment) + 1)
        if last and not first:
            starts = [len(got) - len(segment)] if len(got) >= len(segment) + at else []
        place = next((s for s in starts if _same(segment, got[s : s + len(segment)])), None)
        if place is None:
            return f"no lines {segment!r} where the page shows them"
        at = place + len(segment)
    if segments[-1] and at != len(got):
        return f"more lines printed than the page shows after {segments[-1][-1]!r}"
    return None
