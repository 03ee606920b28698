"""`distkpi report RUN_ID`: a finished run's report, written locally."""

from __future__ import annotations

import argparse
from pathlib import Path

from distkpi_cli.commands.common import Subcommands, UsageError, open_table, table_options
from distkpi_cli.confined import confined


def run(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository, RunRepository
    from distkpi.reporting.page import build_report
    from distkpi.services.baseline import baseline_of

    with open_table(args) as table:
        run = RunRepository(table).get(args.run_id)
        if run is None or run.evaluation is None:
            raise UsageError(f"no finished run {args.run_id} in {table.table_name}")
        files = build_report(run, baseline_of(HistoryRepository(table), run).rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        confined(out, name).write_bytes(data)
    print(out / "index.html")
    return 0


def add(sub: Subcommands) -> None:
    summary = "write a finished run's report (HTML and PNGs) locally"
    rep = sub.add_parser("report", help=summary, description=summary)
    rep.add_argument("run_id", help="the run's id, as `distkpi runs` lists it")
    rep.add_argument("--out", required=True, help="folder to write index.html and the charts to")
    table_options(rep, suite=False)
    rep.set_defaults(func=run)
