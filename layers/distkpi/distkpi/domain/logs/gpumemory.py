"""nvidia-smi CSV samples: the peak memory in use, with or without header and units.

Understood: ``--query-gpu=timestamp,index,memory.used --format=csv[,noheader][,nounits]``
and ``--query-compute-apps=...,used_memory``. Without a header the memory is the last
column; with one it is the column named ``memory.used`` or ``used_memory``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from distkpi.domain.logs.bounds import fits
from distkpi.domain.logs.linescan import Readable, scan_lines

_MEMORY_COLUMNS = ("memory.used", "used_memory")
_VALUE = re.compile(r"\s*+(\d++(?:\.\d++)?+)\s*+(MiB|MB|GiB|GB|KiB)?+\s*+$", re.IGNORECASE)
_TO_MIB = {"": 1.0, "mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0, "kib": 1 / 1024.0}


@dataclass
class GpuMemorySummary:
    peak_mib: float | None = None
    samples: int = 0
    problems: list[str] = field(default_factory=list)


def _header_column(fields: list[str]) -> int | None:
    names = [f.strip().split(" [")[0].strip().lower() for f in fields]
    for wanted in _MEMORY_COLUMNS:
        if wanted in names:
            return names.index(wanted)
    return None


def _mib(text: str) -> float | None:
    m = _VALUE.match(text)
    if not m:
        return None
    value = float(m.group(1)) * _TO_MIB[(m.group(2) or "").lower()]
    return value if fits(value) else None


def parse_gpu_memory(stream: Readable) -> GpuMemorySummary:
    out = GpuMemorySummary()
    column: int | None = None
    unreadable = 0
    lines, problems = scan_lines(stream, None)
    for line in lines:
        fields = line.split(",")
        if not line.strip():
            continue
        header = _header_column(fields)
        if header is not None:
            column = header
            continue
        index = column if column is not None and column < len(fields) else len(fields) - 1
        value = _mib(fields[index])
        if value is None:
            unreadable += 1
            continue
        out.samples += 1
        out.peak_mib = value if out.peak_mib is None else max(out.peak_mib, value)
    if unreadable:
        out.problems.append(f"{unreadable} GPU memory line(s) not understood")
    out.problems.extend(problems.describe())
    if out.samples == 0 and problems.bytes_read:
        out.problems.append("no GPU memory samples")
    return out
