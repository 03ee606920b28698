"""Every kind of file the engine parses is one line of the file-kind registry
(filesummary.FILE_KINDS: kind -> its summary's type and its summariser): summarising a file,
and writing its summary to a manifest and reading it back, go through that line alone, so a
kind added there (traces next) needs nothing else."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.logs import filesummary
from distkpi.domain.logs.filesummary import (
    FILE_KINDS,
    PARSED_KINDS,
    FileKindEntry,
    summarize,
    summary_from_json,
    summary_to_json,
)
from distkpi.domain.logs.gpumemory import GpuMemorySummary
from distkpi.domain.logs.linescan import Readable, scan_lines
from distkpi.domain.logs.logformats import ParseSettings
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.exceptions import ContractError

SEED_GPU = Path(__file__).resolve().parents[2] / "examples" / "seed-run"


@dataclass
class TraceSummary:
    """A stand-in for the next kind: how many trace events a file holds."""

    events: int = 0
    problems: list[str] = field(default_factory=list)


def count_events(stream: Readable, _settings: ParseSettings) -> TraceSummary:
    lines, problems = scan_lines(stream, (b'"ph":',))
    out = TraceSummary(events=sum(1 for _ in lines))
    out.problems.extend(problems.describe())
    return out


def test_the_kinds_parsed_are_the_registrys() -> None:
    assert {"log", "gpu_memory"} == PARSED_KINDS
    assert FILE_KINDS["log"].summary is LogSummary
    assert FILE_KINDS["gpu_memory"].summary is GpuMemorySummary


def test_the_seed_gpu_samples_are_summarised_through_the_registry() -> None:
    sample = sorted(SEED_GPU.glob("*/logs/*.csv"))[0]
    with sample.open("rb") as stream:
        summary = summarize("gpu_memory", stream)
    assert isinstance(summary, GpuMemorySummary) and summary.samples > 0
    assert summary_from_json("gpu_memory", summary_to_json("gpu_memory", summary)) == summary


def test_a_kind_added_to_the_registry_alone_is_summarised_and_round_trips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kind: Any = "trace"
    monkeypatch.setitem(FILE_KINDS, kind, FileKindEntry(TraceSummary, count_events))  # type: ignore[arg-type]
    filesummary._adapter.cache_clear()
    trace = b'[{"name": "matmul", "ph": "X"},\n{"name": "allreduce", "ph": "X"}\n]\n'
    summary = summarize(kind, io.BytesIO(trace))
    assert summary == TraceSummary(events=2)
    through = json.loads(json.dumps(summary_to_json(kind, summary)))
    assert through == {"events": 2, "problems": []}
    assert summary_from_json(kind, through) == summary
    filesummary._adapter.cache_clear()


def test_a_kind_the_registry_lacks_is_neither_parsed_nor_read_back() -> None:
    with pytest.raises(ContractError, match="a 'file' is not parsed"):
        summarize("file", io.BytesIO(b"x\n"))
    with pytest.raises(ContractError, match="a 'file' has no summary"):
        summary_from_json("file", {})
