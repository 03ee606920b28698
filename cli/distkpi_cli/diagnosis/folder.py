"""A folder of traces, base and head, read and reduced:

    RUN_FOLDER/base/commit            the base commit's sha (one line; optional)
    RUN_FOLDER/base/trainer/rank-0.json[.gz] ...   a folder per role
    RUN_FOLDER/base/pserver/...
    RUN_FOLDER/head/...               the same for head

Traces straight in `base/` or `head/` are the trainer's. A rank is the trace's own
(`distributedInfo.rank`), else the number in its file name, else its place in name order."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from distkpi.domain.diagnosis.breakdown import RankBreakdown, reduce_trace
from distkpi.domain.diagnosis.compare import Diagnosis, diagnose
from distkpi.domain.diagnosis.trace import TraceError, read_trace
from distkpi.exceptions import RunFolderError

SIDES = ("base", "head")
TRACE_SUFFIXES = (".json", ".json.gz")
DEFAULT_ROLE = "trainer"
RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)")


def diagnose_folder(run_folder: Path) -> Diagnosis:
    sides: dict[str, dict[str, list[RankBreakdown]]] = {}
    files: dict[str, dict[str, list[dict[str, Any]]]] = {}
    shas: dict[str, str | None] = {}
    for name in SIDES:
        if not (run_folder / name).is_dir():
            raise RunFolderError(f"{run_folder}: no {name}/ folder of traces")
    for name in SIDES:
        folder = run_folder / name
        sides[name], files[name] = _read_side(folder)
        commit = folder / "commit"
        shas[name] = commit.read_text().strip() or None if commit.is_file() else None
    return diagnose(
        sides["base"], sides["head"], base_sha=shas["base"], head_sha=shas["head"], traces=files
    )


def _traces_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))


def _read_side(
    folder: Path,
) -> tuple[dict[str, list[RankBreakdown]], dict[str, list[dict[str, Any]]]]:
    roles = {DEFAULT_ROLE: _traces_in(folder)} if _traces_in(folder) else {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        if _traces_in(sub):
            roles.setdefault(sub.name, []).extend(_traces_in(sub))
    if not roles:
        raise RunFolderError(f"{folder}: no traces (*.json, *.json.gz)")
    reduced: dict[str, list[RankBreakdown]] = {}
    listed: dict[str, list[dict[str, Any]]] = {}
    for role, paths in roles.items():
        for place, path in enumerate(paths):
            try:
                trace = read_trace(path.read_bytes())
            except TraceError as exc:
                raise TraceError(f"{path}: {exc}") from exc
            rank = trace.rank if trace.rank is not None else _rank_in_name(path.name, place)
            r = reduce_trace(trace)
            reduced.setdefault(role, []).append(r)
            listed.setdefault(role, []).append(
                {"file": str(path.relative_to(folder.parent)), "rank": rank,
                 "bytes": path.stat().st_size, "steps": r.steps}
            )  # fmt: skip
    return reduced, listed


def _rank_in_name(name: str, place: int) -> int:
    found = RANK_IN_NAME.search(name)
    return int(found.group(1)) if found else place
