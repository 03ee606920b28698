"""The KPI engine's per-file pass, and its result as JSON: what a node puts in its signed
manifest beside each file's sha256, so that the collector settles a config without reading
its logs.

A summary is what the KPIs need of one file (a log's `LogSummary`, a GPU sample file's
`GpuMemorySummary`): aggregates, problems and counts, never the lines. It is written and
read field by field from the dataclasses themselves, so a field added to them travels
without a change here.

A manifest names the engine that made its summaries (engineversion.py: derived from the
engine's sources): the collector takes a summary only from its own version and parses the
file again otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from distkpi.domain.contracts import FileKind
from distkpi.domain.logs.bounds import fits
from distkpi.domain.logs.gpumemory import GpuMemorySummary, parse_gpu_memory
from distkpi.domain.logs.linescan import Readable
from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings, parse_log
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.exceptions import ContractError

Summary = LogSummary | GpuMemorySummary


@dataclass(frozen=True)
class FileKindEntry:
    """How one kind of file is summarised: its summary's type (written and read back as
    JSON) and the function that streams a file of that kind into one."""

    summary: type[Summary]
    summarise: Callable[[Readable, ParseSettings], Summary]


def _log(stream: Readable, settings: ParseSettings) -> LogSummary:
    return parse_log(stream, settings)


def _gpu_samples(stream: Readable, _settings: ParseSettings) -> GpuMemorySummary:
    return parse_gpu_memory(stream)


# the kinds of file the engine parses, kind -> summariser; a `file` is kept for people, never
# parsed. Adding a kind (traces next): its summary dataclass, its summariser, its line here.
FILE_KINDS: dict[FileKind, FileKindEntry] = {
    "log": FileKindEntry(LogSummary, _log),
    "gpu_memory": FileKindEntry(GpuMemorySummary, _gpu_samples),
}
PARSED_KINDS: frozenset[FileKind] = frozenset(FILE_KINDS)


def _entry(kind: FileKind, what: str) -> FileKindEntry:
    entry = FILE_KINDS.get(kind)
    if entry is None:
        raise ContractError(f"a {kind!r} {what}")
    return entry


def summarize(
    kind: FileKind, stream: Readable, settings: ParseSettings = DEFAULT_SETTINGS
) -> Summary:
    """One file through the engine, as the collector would parse it."""
    return _entry(kind, "is not parsed").summarise(stream, settings)


@cache
def _adapter(kind: FileKind) -> TypeAdapter[Any]:
    return TypeAdapter(_entry(kind, "has no summary").summary)


def summary_to_json(kind: FileKind, summary: Summary) -> dict[str, Any]:
    data: dict[str, Any] = _adapter(kind).dump_python(summary, mode="json")
    return data


def _numbers_fit(data: object) -> bool:
    """Whether every number in it is one the parser could have given (domain/logs/bounds.py): a
    summary skips the parse, not the bounds that keep a KPI storable."""
    if isinstance(data, dict):
        return all(_numbers_fit(value) for value in data.values())
    if isinstance(data, list):
        return all(_numbers_fit(value) for value in data)
    return not isinstance(data, float) or fits(data)


def summary_from_json(kind: FileKind, data: object) -> Summary:
    """The summary a manifest holds; ContractError when it is not one of ``kind``, or holds
    a number no parse could give."""
    adapter = _adapter(kind)
    if not _numbers_fit(data):
        raise ContractError(f"not a summary of a {kind}: a number out of range")
    try:
        summary: Summary = adapter.validate_python(data, strict=False)
    except (ValidationError, RecursionError) as exc:
        raise ContractError(f"not a summary of a {kind}: {exc}") from exc
    return summary
