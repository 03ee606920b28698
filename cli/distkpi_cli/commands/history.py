"""`distkpi history`: the KPI history of a (repo, branch, model)."""

from __future__ import annotations

import argparse
from pathlib import Path

from distkpi_cli.commands.argtypes import positive_int
from distkpi_cli.commands.common import (
    Subcommands,
    UsageError,
    open_table,
    require,
    table_options,
)

FORMATS = ("table", "csv", "json", "parquet")


def _check(args: argparse.Namespace) -> None:
    """What the format needs, before the table is read: UsageError saying what to do."""
    require(
        ["pandas"] + (["pyarrow"] if args.format == "parquet" else []), f"--format {args.format}"
    )
    if args.format == "parquet" and not args.out:
        raise UsageError("--format parquet writes a file: give --out FILE")
    if args.out and not Path(args.out).parent.is_dir():
        raise UsageError(f"--out {args.out}: no folder {Path(args.out).parent} to write it in")


def run(args: argparse.Namespace) -> int:
    _check(args)
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi.adapters.dynamo.bisections import BisectionRepository
    from distkpi.domain.history_rows import rows_from_records
    from distkpi_cli.history_files import write_history

    with open_table(args) as table:
        records = HistoryRepository(table).history(
            args.repo, args.branch, args.model, since=args.since
        )
        rows = [
            r
            for r in rows_from_records(records)
            if (args.config is None or r.config == args.config)
            and (args.kpi is None or r.kpi == args.kpi)
        ]
        bisected = BisectionRepository(table).of_branch(args.repo, args.branch, args.model)
    # the run whose regression a bisection traced names the commit that did it
    culprits = {b.bad_run_id: b.culprit for b in bisected if b.culprit is not None}
    if args.limit is not None:
        runs = sorted({r.run_id: r.finished_at for r in rows}.items(), key=lambda x: x[1])
        keep = {run for run, _ in runs[-args.limit :]}
        rows = [r for r in rows if r.run_id in keep]
    if args.out is None:
        write_history(rows, args.format, culprits=culprits)
        return 0
    path = Path(args.out)
    if args.format == "parquet":
        write_history(rows, args.format, path=path, culprits=culprits)
    else:
        with path.open("w", newline="") as out:
            write_history(rows, args.format, out, culprits=culprits)
    return 0


def add(sub: Subcommands) -> None:
    summary = "the KPI history of a (repo, branch, model): one row per run, config and KPI"
    p = sub.add_parser("history", help=summary, description=summary)
    table_options(p)
    p.add_argument("--config", help="only this config's rows (default: every config)")
    p.add_argument("--kpi", help="only this KPI's rows, e.g. throughput (default: every KPI)")
    p.add_argument("--since", help="ISO date or time: only runs created since then")
    p.add_argument(
        "--limit", type=positive_int, metavar="N", help="only the newest N runs (default: all)"
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table for a terminal, csv (what `distkpi judge` reads), json, or parquet (needs "
        "pyarrow, and --out) (default: %(default)s)",
    )
    p.add_argument("--out", metavar="FILE", help="write to FILE (default: stdout)")
    p.set_defaults(func=run)
