"""Find the lines that matter in a log of any size, in bounded memory, at C speed.

A training log is mostly noise (glog, warnings, progress bars). Running a Python regex on
every line is ~11x slower than grep; instead each chunk is searched for all needles at
once by an Aho-Corasick automaton with a SIMD prefilter (the Rust ``aho-corasick`` crate,
as ripgrep uses), and only the lines that contain a needle are decoded and handed on. Reading
problems (NUL bytes, invalid UTF-8, an over-long or truncated line, an empty file) are
collected, never raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import ahocorasick_rs

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024


@dataclass
class ScanProblems:
    """What went wrong while reading one file; rendered into human-readable problems."""

    bytes_read: int = 0
    nul_bytes: int = 0
    first_invalid_utf8: int | None = None
    long_lines: int = 0
    truncated_last_line: bool = False
    notes: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        out = list(self.notes)
        if self.bytes_read == 0:
            out.append("empty file")
        if self.nul_bytes:
            out.append(f"{self.nul_bytes} NUL byte(s) found; lines holding them were read as text")
        if self.first_invalid_utf8 is not None:
            out.append(
                f"invalid UTF-8 from byte {self.first_invalid_utf8}; "
                "such bytes were replaced while parsing"
            )
        if self.long_lines:
            out.append(f"{self.long_lines} line(s) over {MAX_LINE_BYTES} bytes skipped")
        if self.truncated_last_line:
            out.append("last line has no newline (file cut short?); it was not parsed")
        return out


class Readable(Protocol):
    """What the scanner reads from: a binary stream, or anything with its read()."""

    def read(self, size: int = -1, /) -> bytes: ...


class Trigger(Protocol):
    """A compiled pattern searched over a whole chunk (RE2's, linear in the chunk)."""

    def finditer(self, text: bytes, /) -> Iterator[Any]: ...


class _Scanner:
    def __init__(
        self, stream: Readable, needles: tuple[bytes, ...] | None, triggers: tuple[Trigger, ...]
    ) -> None:
        self.stream = stream
        self.matcher = _matcher(needles) if needles is not None else None
        self.triggers = triggers
        self.problems = ScanProblems()
        self.offset = 0  # of the next byte to check, in the file

    def _check(self, data: bytes, offset: int, start: int, end: int) -> None:
        """Reading problems of ``data[start:end]``, which begins at ``offset`` of the file."""
        if data.find(b"\0", start, end) != -1:  # memchr; counting every block is slower
            self.problems.nul_bytes += data.count(b"\0", start, end)
        if self.problems.first_invalid_utf8 is None and not data.isascii():
            try:
                data[start:end].decode("utf-8")
            except UnicodeDecodeError as exc:
                self.problems.first_invalid_utf8 = offset + exc.start

    def _candidate_starts(self, data: bytes, start: int, end: int) -> list[int]:
        if self.matcher is None:
            return _all_line_starts(data, start, end)
        # a view, not a copy, of the part searched: the matcher reads any buffer
        view = memoryview(data)[start:end]
        rfind = data.rfind
        starts = {
            max(rfind(b"\n", start, start + at) + 1, start)
            for _, at, _ in self.matcher.find_matches_as_indexes(view)
        }
        if self.triggers:  # a suite's own patterns: searched over the part, as RE2 needs bytes
            part = data[start:end]
            for trigger in self.triggers:
                starts.update(
                    max(rfind(b"\n", start, start + m.start()) + 1, start)
                    for m in trigger.finditer(part)
                )
        return sorted(starts)

    def _lines_of(self, data: bytes, start: int, end: int) -> Iterator[str]:
        """The candidate lines of ``data[start:end]``, which holds whole lines only."""
        self._check(data, self.offset, start, end)
        for first in self._candidate_starts(data, start, end):
            stop = data.find(b"\n", first, end)
            raw = data[first : stop if stop != -1 else end]
            if len(raw) > MAX_LINE_BYTES:
                self.problems.long_lines += 1
                continue
            yield raw.decode("utf-8", errors="replace").rstrip("\r")
        self.offset += end - start

    def lines(self) -> Iterator[str]:
        carry = b""
        skipping_long_line = False
        while True:
            block = self.stream.read(CHUNK_BYTES)
            if not block:
                break
            self.problems.bytes_read += len(block)
            if skipping_long_line:
                cut = block.find(b"\n")
                if cut == -1:
                    self.offset += len(block)
                    continue
                skipping_long_line = False
                self.offset += cut + 1
                block = block[cut + 1 :]
            cut = block.rfind(b"\n")
            if cut == -1:
                carry += block
                if len(carry) > MAX_LINE_BYTES:
                    self.problems.long_lines += 1
                    self.offset += len(carry)
                    carry = b""
                    skipping_long_line = True
                continue
            # The block is searched where it lies; only the line it shares with the last
            # block is put together (copying a whole block costs more than searching it).
            start = 0
            if carry:
                start = block.find(b"\n") + 1
                head = carry + block[:start]
                yield from self._lines_of(head, 0, len(head))
            yield from self._lines_of(block, start, cut + 1)
            carry = block[cut + 1 :]
        if carry.strip():
            self._check(carry, self.offset, 0, len(carry))
            self.problems.truncated_last_line = True


@lru_cache(maxsize=8)
def _matcher(needles: tuple[bytes, ...]) -> ahocorasick_rs.BytesAhoCorasick:
    # Leftmost-first matching is what turns on the SIMD prefilter (~16 GB/s here).
    return ahocorasick_rs.BytesAhoCorasick(
        list(needles), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST
    )


def _all_line_starts(data: bytes, start: int, end: int) -> list[int]:
    starts = [start]
    pos = data.find(b"\n", start, end)
    while pos != -1 and pos + 1 < end:
        starts.append(pos + 1)
        pos = data.find(b"\n", pos + 1, end)
    return starts


def scan_lines(
    stream: Readable, needles: tuple[bytes, ...] | None, triggers: tuple[Trigger, ...] = ()
) -> tuple[Iterator[str], ScanProblems]:
    """Lines of ``stream`` that contain one of ``needles`` or match one of ``triggers``
    (every line when needles is None), in order.

    The problems object fills in while the iterator is consumed.
    """
    scanner = _Scanner(stream, needles, triggers)
    return scanner.lines(), scanner.problems
