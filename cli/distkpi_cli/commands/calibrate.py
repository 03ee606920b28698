"""`distkpi calibrate`: start A/A jobs of a suite through GitHub (--start), or report what a
branch's A/A jobs say of the fleet's noise and of the verdict designs."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from distkpi_cli.commands.common import Subcommands, UsageError, open_table, table_options


def run(args: argparse.Namespace) -> int:
    if args.start:
        return _start(args)
    from distkpi.domain.planning.suites import load_suite
    from distkpi_cli.calibration_report import calibration_report, render

    settings = load_suite(Path(args.suite)).verdict if args.suite else None
    with open_table(args) as table:
        report = calibration_report(
            table, args.repo, args.branch, args.model, drop=args.drop, settings=settings
        )
    print(json.dumps(report.calibration.to_json(), indent=2) if args.json else render(report))
    return 0


def _start(args: argparse.Namespace) -> int:
    from distkpi.domain.github.webhook import SHA
    from distkpi_cli.github_dispatch import ask_calibration

    if not args.sha or not SHA.fullmatch(args.sha):
        raise UsageError("--start needs --sha, the commit's full 40-digit lower-case hex sha")
    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        raise UsageError("--start needs $GITHUB_TOKEN: a token that may write to --repo")
    asked = {"sha": args.sha, "model": args.model, "jobs": args.jobs, "branch": args.branch}
    ask_calibration(args.api_url, args.repo, token, asked)
    print(
        f"asked GitHub for {args.jobs} A/A job(s) of {args.model} at {args.sha[:10]} on "
        f"{args.repo} (repository_dispatch distkpi-calibrate); their history joins "
        f"{args.branch}'s"
    )
    return 0


def jobs_count(text: str) -> int:
    from distkpi.domain.github.webhook import MAX_CALIBRATION_JOBS

    jobs = int(text)
    if not 0 < jobs <= MAX_CALIBRATION_JOBS:
        raise argparse.ArgumentTypeError(f"{text}: from 1 to {MAX_CALIBRATION_JOBS} A/A jobs")
    return jobs


def drop_share(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a share of the throughput between 0 and 1")
    return value


def add(sub: Subcommands) -> None:
    p = sub.add_parser(
        "calibrate",
        help="A/A jobs of a suite: start them (--start), or report the fleet's noise from them",
    )
    table_options(p)
    p.add_argument(
        "--start",
        action="store_true",
        help="ask GitHub (repository_dispatch) for --jobs A/A jobs at --sha; needs $GITHUB_TOKEN",
    )
    p.add_argument("--sha", help="with --start: the commit measured in both arms")
    p.add_argument("--jobs", type=jobs_count, default=3, help="with --start: how many A/A jobs")
    p.add_argument(
        "--api-url", default="https://api.github.com", help="with --start: GitHub's REST API"
    )
    p.add_argument(
        "--drop", type=drop_share, default=0.25, help="the throughput drop to rank the designs by"
    )
    p.add_argument(
        "--suite", help="suite file whose verdict settings to use (default: the runs' own)"
    )
    p.add_argument("--json", action="store_true", help="print Calibration.to_json()")
    p.set_defaults(func=run)
