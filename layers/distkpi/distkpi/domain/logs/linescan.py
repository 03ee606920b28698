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
from typing import Protocol

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


class _Scanner:
    def __init__(self, stream: Readable, needles: tuple[bytes, ...] | None) -> None:
        self.stream = stream
        self.matcher = _matcher(needles) if needles is not None else None
        self.problems = ScanProblems()

    def _check(self, chunk: bytes, offset: int) -> None:
        if b"\0" in chunk:
            self.problems.nul_bytes += chunk.count(b"\0")
        if self.problems.first_invalid_utf8 is None and not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.problems.first_invalid_utf8 = offset + exc.start

    def _candidate_starts(self, chunk: bytes) -> list[int]:
        if self.matcher is None:
            return _all_line_starts(chunk)
        rfind = chunk.rfind
        starts = {
            rfind(b"\n", 0, at) + 1 for _, at, _ in self.matcher.find_matches_as_indexes(chunk)
        }
        return sorted(starts)

    def _lines_of(self, chunk: bytes) -> Iterator[str]:
        for start in self._candidate_starts(chunk):
            end = chunk.find(b"\n", start)
            raw = chunk[start : end if end != -1 else len(chunk)]
            if len(raw) > MAX_LINE_BYTES:
                self.problems.long_lines += 1
                continue
            yield raw.decode("utf-8", errors="replace").rstrip("\r")

    def lines(self) -> Iterator[str]:
        carry = b""
        offset = 0
        skipping_long_line = False
        while True:
            block = self.stream.read(CHUNK_BYTES)
            if not block:
                break
            self.problems.bytes_read += len(block)
            if skipping_long_line:
                cut = block.find(b"\n")
                if cut == -1:
                    offset += len(block)
                    continue
                skipping_long_line = False
                offset += cut + 1
                block = block[cut + 1 :]
            data = carry + block if carry else block
            cut = data.rfind(b"\n")
            if cut == -1:
                carry = data
                if len(carry) > MAX_LINE_BYTES:
                    self.problems.long_lines += 1
                    offset += len(carry)
                    carry = b""
                    skipping_long_line = True
                continue
            chunk, carry = data[: cut + 1], data[cut + 1 :]
            self._check(chunk, offset)
            yield from self._lines_of(chunk)
            offset += len(chunk)
        if carry.strip():
            self._check(carry, offset)
            self.problems.truncated_last_line = True


@lru_cache(maxsize=8)
def _matcher(needles: tuple[bytes, ...]) -> ahocorasick_rs.BytesAhoCorasick:
    # Leftmost-first matching is what turns on the SIMD prefilter (~16 GB/s here).
    return ahocorasick_rs.BytesAhoCorasick(
        list(needles), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST
    )


def _all_line_starts(chunk: bytes) -> list[int]:
    starts = [0]
    pos = chunk.find(b"\n")
    while pos != -1 and pos + 1 < len(chunk):
        starts.append(pos + 1)
        pos = chunk.find(b"\n", pos + 1)
    return starts


def scan_lines(
    stream: Readable, needles: tuple[bytes, ...] | None
) -> tuple[Iterator[str], ScanProblems]:
    """Lines of ``stream`` that contain one of ``needles`` (every line when None), in order.

    The problems object fills in while the iterator is consumed.
    """
    scanner = _Scanner(stream, needles)
    return scanner.lines(), scanner.problems
