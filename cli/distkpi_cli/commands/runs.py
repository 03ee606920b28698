"""`distkpi runs`: the runs of one commit, with their verdicts."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from distkpi_cli.commands.common import Subcommands, open_table, table_options
from distkpi_cli.commands.listing import print_listed

if TYPE_CHECKING:
    from distkpi.domain.records import RunRecord


def run(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository, RunRepository
    from distkpi_cli.revisions import stored_sha

    with open_table(args) as table:
        history = HistoryRepository(table)

        def stored() -> Iterator[str]:
            every = history.series(args.repo) + history.pull_request_series(args.repo)
            for series in every:
                for record in history.history(args.repo, series.branch, series.model):
                    yield record.sha

        args.sha = stored_sha(args.sha, stored, Path.cwd())
        runs = RunRepository(table).of_commit(args.repo, args.sha)
    return print_listed(
        [_run_summary(r) for r in runs],
        as_json=args.json,
        to_json=lambda summary: summary,
        line=lambda summary: (
            f"{summary['created_at']}  {summary['run_id']:40s} {summary['status']:8s} "
            f"{summary['state'] or '-':8s} {summary['description'] or ''}"
        ),
        none=f"no runs of {args.repo}@{args.sha[:10]}",
    )


def _run_summary(run: RunRecord) -> dict[str, object]:
    evaluation = run.evaluation
    return {
        "run_id": run.run_id,
        "model": run.model,
        "event": run.trigger.event,
        "created_at": run.created_at,
        "status": run.status.value,
        "state": evaluation.verdict.state.value if evaluation else None,
        "description": evaluation.description if evaluation else run.cancelled_reason,
    }


def add(sub: Subcommands) -> None:
    summary = "the runs of one commit, with their verdicts"
    commit = sub.add_parser("runs", help=summary, description=summary)
    commit.add_argument("--repo", required=True, help="owner/name")
    commit.add_argument(
        "--sha",
        required=True,
        metavar="REV",
        help="the commit: a full sha, a prefix of a stored run's sha, or a git revision "
        "(HEAD, a branch) of the repository this runs in",
    )
    commit.add_argument("--json", action="store_true", help="print a JSON list of the runs")
    table_options(commit, suite=False)
    commit.set_defaults(func=run)
