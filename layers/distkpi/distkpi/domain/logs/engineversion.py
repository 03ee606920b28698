"""The version of the KPI engine that made a file's summary, derived from the engine's own
sources: a changed reader, scanner or summary changes it by itself, and the collector then
parses again the files whose summaries an older engine made (nothing to bump).

The sources are every module under domain/logs/ (readers included) and the two it reads
accuracy and patterns with; the node's job image and the collector's layer install the
same package, so both compute the same version. It is an integer, as the node's manifest
has always stated: 2^48 plus the first 48 bits of the sources' sha256, so it never equals a
version written by hand before it (1-6), which are read as another engine's.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

LOGS = Path(__file__).resolve().parent
# what a summary depends on besides domain/logs/**: relative to domain/logs/
OTHER_SOURCES = ("../accuracy.py", "../patterns.py")
DERIVED_FROM = 1 << 48


def engine_sources(logs: Path = LOGS) -> tuple[str, ...]:
    """The sources' names, relative to ``logs``, in the order they are hashed."""
    own = sorted(p.relative_to(logs).as_posix() for p in logs.rglob("*.py"))
    return (*OTHER_SOURCES, *own)


def sources_digest(logs: Path = LOGS) -> str:
    """sha256 over each source's name and bytes."""
    digest = hashlib.sha256()
    for name in engine_sources(logs):
        digest.update(name.encode() + b"\0" + (logs / name).read_bytes() + b"\0")
    return digest.hexdigest()


def version_of(logs: Path) -> int:
    return DERIVED_FROM + int(sources_digest(logs)[:12], 16)


@cache
def engine_version() -> int:
    """This engine's version, computed the first time it is asked (not at import: a cold
    start that writes or reads no summary never reads the sources)."""
    return version_of(LOGS)
