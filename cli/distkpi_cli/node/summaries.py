"""What a node says of each file it uploads, from the one read it makes of it: the file's
sha256 and, for a file the KPI engine parses, the engine's summary of it
(domain/logs/filesummary.py), so that the collector settles the config without reading the file.

A node parses with the run's parse settings (accuracy_direction, warmup_reports, metrics),
which the launcher puts in the job's environment (DISTKPI_PARSE_SETTINGS, from the run it
stored; never run.json in the bucket, which any job can rewrite), and its manifest names
their digest (domain/logs/parsesettings.py): the collector takes the summaries when that is
the run's own, and parses the files otherwise (kpis/runfolder.Reading).
"""

from __future__ import annotations

from typing import Any, BinaryIO

from distkpi.domain.contracts import FileKind
from distkpi.domain.logs.filesummary import PARSED_KINDS, summarize, summary_to_json
from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings
from distkpi.domain.signing import HashingReader


def describe(
    stream: BinaryIO, kind: FileKind, settings: ParseSettings = DEFAULT_SETTINGS
) -> dict[str, Any]:
    """`sha256`, and `summary` when the engine parses a file of ``kind`` and could: a parser
    bug leaves the file without one (the collector then parses it) and the node unharmed."""
    summary = None
    with HashingReader(stream) as reading:
        if kind in PARSED_KINDS:
            try:
                summary = summary_to_json(kind, summarize(kind, reading, settings))
            except OSError:
                raise
            except Exception:  # a parser bug: no summary, the collector parses the file
                summary = None
        described: dict[str, Any] = {"sha256": reading.finish()}
    if summary is not None:
        described["summary"] = summary
    return described
