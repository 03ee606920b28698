"""`distkpi site`: the KPI history as static pages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from distkpi_cli.commands.argtypes import positive_int
from distkpi_cli.commands.common import Subcommands, open_table, table_options


def run(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi.reporting.site import FolderSite, build_site

    out = Path(args.out)
    with open_table(args) as table:
        built = build_site(
            HistoryRepository(table),
            FolderSite(out),
            repo=args.repo,
            model=args.model,
            branch=args.branch,
            report_url=args.report_url,
            page_runs=args.page_runs,
        )
    print(
        f"{out / 'index.html'}: {built.histories} histories, {built.runs} runs, "
        f"{built.pages} page(s)"
    )
    unreached = built.unreached_line(out / "index.html")
    if unreached is not None:
        print(f"warning: {unreached}", file=sys.stderr)
    return 0


def add(sub: Subcommands) -> None:
    summary = "write the KPI history as static pages to browse"
    site = sub.add_parser("site", help=summary, description=summary)
    site.add_argument("--out", required=True, help="folder to write index.html and pages to")
    site.add_argument(
        "--repo", help="only this repository's histories, owner/name (default: every one)"
    )
    site.add_argument("--model", help="only this suite's (default: every suite)")
    site.add_argument("--branch", help="only this branch's (default: every branch)")
    site.add_argument(
        "--report-url",
        default="../reports/{run_id}/index.html",
        help="where a point links, {run_id} filled in; the default is the reports beside the "
        "site (default: %(default)s)",
    )
    site.add_argument(
        "--page-runs",
        type=positive_int,
        default=500,
        metavar="N",
        help="runs per page of a history (default: %(default)s)",
    )
    table_options(site, suite=False)
    site.set_defaults(func=run)
