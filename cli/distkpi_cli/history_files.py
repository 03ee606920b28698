"""History rows to and from files with pandas: csv (what `distkpi judge` reads), json,
parquet (needs pyarrow), or a terminal table."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from distkpi.domain.judging.history import HISTORY_COLUMNS, HistoryRow
from distkpi.domain.records import ResetRecord
from distkpi.exceptions import ContractError

RESET_COLUMNS = ("repo", "branch", "model", "config", "reason", "who", "at")
REQUIRED = ("finished_at", "repo", "branch", "model", "config", "sha", "run_id", "kpi", "value")


def read_history_csv(path: Path) -> list[HistoryRow]:
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype={"sha": str, "run_id": str, "config": str})
    except (OSError, ValueError) as exc:
        raise ContractError(f"{path}: cannot be read as CSV: {exc}") from exc
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ContractError(f"{path}: missing column(s) {', '.join(missing)}")
    if "status" not in frame.columns:
        frame["status"] = "ok"
    for optional in ("hardware", "gpu_hours", "paired_d", "layout"):  # older files have none
        if optional not in frame.columns:
            frame[optional] = None
    for number in ("value", "gpu_hours", "paired_d"):
        frame[number] = pd.to_numeric(frame[number], errors="coerce")
    if "calibration" not in frame.columns:  # files from before calibration runs
        frame["calibration"] = False
    frame = frame.sort_values("finished_at", kind="stable")
    return [
        HistoryRow(
            finished_at=str(r["finished_at"]),
            repo=str(r["repo"]),
            branch=str(r["branch"]),
            model=str(r["model"]),
            config=str(r["config"]),
            sha=str(r["sha"]),
            run_id=str(r["run_id"]),
            kpi=str(r["kpi"]),
            value=None if pd.isna(r["value"]) else float(r["value"]),
            status=str(r["status"]),
            hardware=None if pd.isna(r["hardware"]) else str(r["hardware"]),
            gpu_hours=None if pd.isna(r["gpu_hours"]) else float(r["gpu_hours"]),
            paired_d=None if pd.isna(r["paired_d"]) else float(r["paired_d"]),
            calibration=str(r["calibration"]).lower() == "true",
            layout=None if pd.isna(r["layout"]) else str(r["layout"]),
        )
        for r in frame.to_dict(orient="records")
    ]


def write_history(
    rows: Sequence[HistoryRow],
    fmt: str,
    out: TextIO | None = None,
    path: Path | None = None,
    culprits: Mapping[str, str] | None = None,
) -> None:
    """The rows in ``fmt``; with ``culprits`` (a regressed run's id -> the commit its
    bisection found), a last column `culprit` on the rows of those runs."""
    import pandas as pd

    out = out or sys.stdout
    frame = pd.DataFrame([r.to_json() for r in rows], columns=list(HISTORY_COLUMNS))
    if culprits and any(r.run_id in culprits for r in rows):
        frame["culprit"] = [culprits.get(r.run_id, "") for r in rows]
    if fmt == "csv":
        frame.to_csv(out, index=False)
    elif fmt == "json":
        frame.to_json(out, orient="records", indent=2)
        out.write("\n")
    elif fmt == "parquet":
        if path is None:
            raise ContractError("--format parquet needs --out FILE")
        try:
            frame.to_parquet(path, index=False)
        except ImportError as exc:
            raise ContractError(
                "--format parquet needs pyarrow: pip install 'distkpi[analysis]'"
            ) from exc
    else:
        out.write(frame.to_string(index=False) + "\n" if len(frame) else "no history\n")


def read_resets_csv(path: Path) -> list[ResetRecord]:
    """Audited baseline resets, as `distkpi baseline resets --format csv` writes them."""
    import csv

    try:
        with path.open(newline="") as stream:
            rows = list(csv.DictReader(stream))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ContractError(f"{path}: cannot be read as CSV: {exc}") from exc
    missing = [c for c in RESET_COLUMNS if rows and c not in rows[0]]
    if missing:
        raise ContractError(f"{path}: missing column(s) {', '.join(missing)}")
    return [ResetRecord(*(str(r[c]) for c in RESET_COLUMNS)) for r in rows]


def write_resets(resets: Sequence[ResetRecord], fmt: str, out: TextIO | None = None) -> None:
    import csv
    import json

    out = out or sys.stdout
    rows = [{c: getattr(r, c) for c in RESET_COLUMNS} for r in resets]
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=RESET_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    elif fmt == "json":
        out.write(json.dumps(rows, indent=2) + "\n")
    elif not rows:
        out.write("no resets\n")
    else:
        for r in resets:
            out.write(f"{r.at}  {r.config}  by {r.who}: {r.reason}\n")
