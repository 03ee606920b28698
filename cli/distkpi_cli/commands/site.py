"""`distkpi site`: the KPI history as static pages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from distkpi_cli.commands.argtypes import positive_int
from distkpi_cli.commands.common import Subcommands, UsageError, open_table, table_options


def run(args: argparse.Namespace) -> int:
    if args.rebuild:
        if (args.out is None) == (args.bucket is None):
            raise UsageError("--rebuild writes to one place: give --out DIR or --bucket B")
        return rebuild(args)
    if args.bucket is not None:
        raise UsageError("--bucket is where --rebuild writes: give --rebuild, or --out alone")
    if args.out is None:
        raise UsageError("give --out DIR (or --rebuild with --out DIR or --bucket B)")
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi_cli.site_pages import FolderSite, build_site

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


def rebuild(args: argparse.Namespace) -> int:
    """Every file of the site's application and its api/ from the table, into a folder or
    the bucket's site/ prefix (a migration: a publish updates them run by run)."""
    from datetime import UTC, datetime

    from distkpi.adapters.dynamo import HistoryRepository, RunRepository
    from distkpi.domain.records import RunRecord
    from distkpi.reporting.app_files import read_app
    from distkpi.services.site import BucketSite
    from distkpi.services.site import rebuild as rebuild_site
    from distkpi_cli.site_pages import FolderSite

    with open_table(args) as table:
        repository = RunRepository(table)

        def finished(run_id: str) -> tuple[RunRecord, Any] | None:
            run = repository.get(run_id)
            return (run, run.evaluation) if run and run.evaluation and run.finished_at else None

        if args.out is not None:
            writer: Any = FolderSite(Path(args.out))
            where = str(Path(args.out))
        else:
            from distkpi.adapters.s3_runs import S3RunStore

            writer = BucketSite(S3RunStore(args.bucket, _s3(args.endpoint_url)))
            where = f"s3://{args.bucket}/site/"
        built = rebuild_site(
            HistoryRepository(table),
            writer,
            runs=finished,
            repo=args.repo,
            model=args.model,
            branch=args.branch,
            app=read_app(),
            now=datetime.now(UTC).isoformat(timespec="seconds"),
            twins=args.out is not None,  # a folder is read from file://
        )
    print(
        f"{where}: {built.histories} histories, {built.runs} runs, {built.chunks} chunk(s), "
        f"{built.run_files} run file(s)"
    )
    return 0


def _s3(endpoint_url: str | None) -> Any:
    import boto3

    from distkpi.adapters.aws import CLIENT_CONFIG

    return boto3.client("s3", endpoint_url=endpoint_url, config=CLIENT_CONFIG)


def add(sub: Subcommands) -> None:
    summary = "write the KPI history as static pages to browse"
    site = sub.add_parser("site", help=summary, description=summary)
    site.add_argument("--out", help="folder to write index.html and pages to")
    site.add_argument(
        "--rebuild",
        action="store_true",
        help="write the site's application and every api/ file (docs/reference/history-api.md) "
        "from the table, to --out or --bucket: a migration (runs update them as they finish)",
    )
    site.add_argument(
        "--bucket", help="with --rebuild: the stack's bucket, written under its site/ prefix"
    )
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
