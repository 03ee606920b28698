"""`distkpi history`: the KPI history of a (repo, branch, model)."""

from __future__ import annotations

import argparse
from pathlib import Path

from distkpi_cli.commands.common import Subcommands, open_table, table_options
from distkpi_cli.history_files import FORMATS


def run(args: argparse.Namespace) -> int:
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
    write_history(rows, args.format, path=Path(args.out) if args.out else None, culprits=culprits)
    return 0


def add(sub: Subcommands) -> None:
    p = sub.add_parser("history", help="KPI history of a (repo, branch, model)")
    table_options(p)
    p.add_argument("--config")
    p.add_argument("--kpi")
    p.add_argument("--since", help="ISO date or time: only runs created since then")
    p.add_argument("--limit", type=int, help="only the newest N runs")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--out", help="file to write (needed for parquet)")
    p.set_defaults(func=run)
