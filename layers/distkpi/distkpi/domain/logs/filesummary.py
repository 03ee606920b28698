"""The KPI engine's per-file pass, and its result as JSON: what a node puts in its signed
manifest beside each file's sha256, so that the collector settles a config without reading
its logs.

A summary is what the KPIs need of one file (a log's `LogSummary`, a GPU sample file's
`GpuMemorySummary`): aggregates, problems and counts, never the lines. It is written and
read field by field from the dataclasses themselves, so a field added to them travels
without a change here.

`ENGINE_VERSION` names the engine that made a summary: the collector takes a summary only
from its own version and parses the file again otherwise. Bump it whenever parsing changes;
tests/unit/test_engine_version.py records the hash of the parser's sources per version, so
changing them without a bump fails.
"""

from __future__ import annotations

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

ENGINE_VERSION = 6

Summary = LogSummary | GpuMemorySummary
# the kinds of file the engine parses; a `file` is kept for people, never parsed
PARSED_KINDS: frozenset[FileKind] = frozenset({"log", "gpu_memory"})


def summarize(
    kind: FileKind, stream: Readable, settings: ParseSettings = DEFAULT_SETTINGS
) -> Summary:
    """One file through the engine, as the collector would parse it."""
    if kind == "log":
        return parse_log(stream, settings)
    if kind == "gpu_memory":
        return parse_gpu_memory(stream)
    raise ContractError(f"a {kind!r} is not parsed")


@cache
def _adapter(kind: FileKind) -> TypeAdapter[Any]:
    return TypeAdapter(LogSummary if kind == "log" else GpuMemorySummary)


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
    if kind not in PARSED_KINDS:
        raise ContractError(f"a {kind!r} has no summary")
    if not _numbers_fit(data):
        raise ContractError(f"not a summary of a {kind}: a number out of range")
    try:
        summary: Summary = _adapter(kind).validate_python(data, strict=False)
    except (ValidationError, RecursionError) as exc:
        raise ContractError(f"not a summary of a {kind}: {exc}") from exc
    return summary
