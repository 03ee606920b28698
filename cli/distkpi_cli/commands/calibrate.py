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
    from distkpi_cli.github_dispatch import ask_calibration
    from distkpi_cli.revisions import FULL_SHA, commit_of

    if not args.sha:
        raise UsageError("--start needs --sha: the commit to measure (a sha or a git revision)")
    if not FULL_SHA.fullmatch(args.sha):
        args.sha = commit_of(args.sha, Path.cwd())
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

    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if not 0 < jobs <= MAX_CALIBRATION_JOBS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a whole number from 1 to {MAX_CALIBRATION_JOBS} (A/A jobs)"
        )
    return jobs


def drop_share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a share of the throughput between 0 and 1, e.g. 0.25"
        )
    return value


def add(sub: Subcommands) -> None:
    summary = "A/A jobs of a suite: start them (--start), or report the fleet's noise from them"
    p = sub.add_parser("calibrate", help=summary, description=summary)
    table_options(p)
    p.add_argument(
        "--start",
        action="store_true",
        help="ask GitHub (repository_dispatch) for --jobs A/A jobs at --sha; needs $GITHUB_TOKEN",
    )
    p.add_argument(
        "--sha",
        metavar="REV",
        help="with --start: the commit measured in both arms (a sha, or a git revision of "
        "the repository this runs in)",
    )
    p.add_argument(
        "--jobs",
        type=jobs_count,
        default=3,
        help="with --start: how many A/A jobs (default: %(default)s)",
    )
    p.add_argument(
        "--api-url",
        default="https://api.github.com",
        help="with --start: GitHub's REST API (default: %(default)s)",
    )
    p.add_argument(
        "--drop",
        type=drop_share,
        default=0.25,
        help="the throughput drop to rank the designs by (default: %(default)s)",
    )
    p.add_argument(
        "--suite", help="suite file whose verdict settings to use (default: the runs' own)"
    )
    p.add_argument("--json", action="store_true", help="print Calibration.to_json()")
    p.set_defaults(func=run)
