"""A diagnosis job's traces, found in its nodes' signed manifests and reduced: the arm A
run's are the base's, arm B's the head's (`pair-1/a/`, `pair-1/b/`), each under
`files/<role>-<rank>/profile/` (DISTKPI_PROFILE_DIR in the run's DISTKPI_LOG_DIR).

What is read is bounded, so that a config's reduction fits the collector's invocation: a
trace over MAX_TRACE_BYTES (of JSON, once inflated) is not reduced, nor traces past
MAX_CONFIG_TRACE_BYTES (as uploaded) or MAX_CONFIG_EVENTS (about a minute of CPU: the
largest real trace's 74,937 events take 2 s) in a config; each is a problem of the
diagnosis, which then compares the ranks it has."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from distkpi.domain.contracts import FileEntry
from distkpi.domain.diagnosis.breakdown import RankBreakdown, reduce_trace
from distkpi.domain.diagnosis.compare import Diagnosis, diagnose
from distkpi.domain.diagnosis.trace import TraceError, read_trace

MAX_CONFIG_TRACE_BYTES = 512 * 2**20
MAX_CONFIG_EVENTS = 2_000_000
ARMS = {"a": "base", "b": "head"}
TRACE_PATH = re.compile(
    r"^pair-1/(?P<arm>[ab])/files/(?P<stem>[a-z]+-\d+)/profile/(?P<name>[^/]+\.json(\.gz)?)$"
)


@dataclass(frozen=True)
class TraceFile:
    side: str  # base or head
    role: str
    rank: int
    path: str  # in the config folder
    sha256: str | None


def trace_files(entries: Iterable[FileEntry]) -> list[TraceFile]:
    """The traces among a diagnosis job's manifest entries, in path order."""
    found = []
    for e in entries:
        m = TRACE_PATH.match(e.path)
        if m is not None:
            found.append(TraceFile(ARMS[m["arm"]], e.role, e.rank, e.path, e.sha256))
    return sorted(found, key=lambda t: t.path)


@dataclass
class Reduced:
    diagnosis: Diagnosis | None
    problems: list[str] = field(default_factory=list)
    bytes_read: int = 0
    events: int = 0


def reduce_traces(
    files: Iterable[TraceFile],
    read: Callable[[str], bytes],
    *,
    base_sha: str,
    head_sha: str,
    link: Callable[[str], str] = lambda path: path,
) -> Reduced:
    """Each trace read (``read``: its bytes by path), checked against its manifest's
    sha256, and reduced; the two sides compared. ``link``: what a trace's entry in
    `traces` points at (its path in the run folder)."""
    sides: dict[str, dict[str, list[RankBreakdown]]] = {"base": {}, "head": {}}
    listed: dict[str, dict[str, list[dict[str, Any]]]] = {"base": {}, "head": {}}
    out = Reduced(None)
    for t in files:
        if out.bytes_read >= MAX_CONFIG_TRACE_BYTES:
            out.problems.append(
                f"{t.path}: not read, past {MAX_CONFIG_TRACE_BYTES} bytes of traces"
            )
            continue
        data = read(t.path)
        out.bytes_read += len(data)
        if t.sha256 is not None and hashlib.sha256(data).hexdigest() != t.sha256:
            out.problems.append(f"{t.path}: changed after upload (sha256 is not the manifest's)")
            continue
        try:
            trace = read_trace(data)
        except TraceError as exc:
            out.problems.append(f"{t.path}: {exc}")
            continue
        if out.events + len(trace.events) > MAX_CONFIG_EVENTS:
            out.problems.append(f"{t.path}: not reduced, past {MAX_CONFIG_EVENTS} events of traces")
            continue
        out.events += len(trace.events)
        reduced = reduce_trace(trace)
        sides[t.side].setdefault(t.role, []).append(reduced)
        listed[t.side].setdefault(t.role, []).append(
            {"file": link(t.path), "rank": t.rank, "bytes": len(data), "steps": reduced.steps}
        )
    for side, roles in sides.items():
        if not roles:
            out.problems.append(f"no {side} traces: the command wrote none to DISTKPI_PROFILE_DIR")
    if all(sides.values()):
        out.diagnosis = diagnose(
            sides["base"], sides["head"], base_sha=base_sha, head_sha=head_sha, traces=listed
        )
    return out
