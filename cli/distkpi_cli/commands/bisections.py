"""`distkpi bisections`: the bisections of regressions, by key (each history's `SERIES` entry
names its (repo, branch, model), whose bisections are one Query)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from distkpi_cli.commands.common import Subcommands, open_table, table_options
from distkpi_cli.commands.listing import histories, print_listed

if TYPE_CHECKING:
    from distkpi.domain.bisect.plan import Bisection


def run(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo.bisections import BisectionRepository

    with open_table(args) as table:
        repository = BisectionRepository(table)
        keys = histories(table, args.repo, args.model, args.branch)
        found = [b for key in keys for b in repository.of_branch(*key)]
    found.sort(key=lambda b: (b.created_at, b.bad_run_id))
    return print_listed(
        found, as_json=args.json, to_json=lambda b: b.summary(), line=_line, none="no bisections"
    )


def _line(b: Bisection) -> str:
    s = b.summary()
    culprit = (b.culprit or "-")[:10]
    return (
        f"{b.created_at}  {b.repo} {b.branch} {b.model}  {b.good[:10]}...{b.bad[:10]}  "
        f"{s['state']:12s} culprit {culprit:10s} {len(b.steps)} steps "
        f"{b.gpu_hours:.3g} GPU-hours  {','.join(b.configs)}  {b.why}"
    )


def add(sub: Subcommands) -> None:
    summary = "bisections of regressions, newest last"
    p = sub.add_parser("bisections", help=summary, description=summary)
    p.add_argument("--repo", help="owner/name (default: every repository)")
    p.add_argument("--model", help="suite name (default: every suite)")
    p.add_argument("--branch", help="only this branch's (default: every branch)")
    p.add_argument("--json", action="store_true", help="print a JSON list of the bisections")
    table_options(p, suite=False)
    p.set_defaults(func=run)
