"""`distkpi accept RUN_ID --reason TEXT`: accept a run's intended regression. The command
asks GitHub for a repository_dispatch (`distkpi-accept`) with your token, so the stack
hears it as a signed delivery from you and checks your permission on the repository with
GitHub, exactly as for a `/distkpi accept` comment. With --local, the running `distkpi
local up`'s GitHub stand-in is asked, and its delivery's answer printed."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from distkpi_cli.commands.common import FAILURE, Subcommands, UsageError, open_table, table_options

DEFAULT_API = "https://api.github.com"
DELIVERY_TIMEOUT_S = 30


def run(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import RunRepository

    if not args.reason.strip():
        raise UsageError("--reason is empty: say why the regression is intended")
    with open_table(args) as table:
        found = RunRepository(table).get(args.run_id)
    if found is None:
        raise UsageError(f"no run {args.run_id} in the table")
    repo = found.trigger.repo
    asked = {"run_id": args.run_id, "reason": args.reason.strip()}
    if args.local:
        return _local(args, repo, asked)
    from distkpi_cli.github_dispatch import ask_dispatch

    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        raise UsageError("needs $GITHUB_TOKEN: a token of yours that may write to the repository")
    ask_dispatch(args.api_url, repo, token, "distkpi-accept", asked)
    print(
        f"asked GitHub to accept {args.run_id} of {repo} (repository_dispatch "
        "distkpi-accept): the stack checks your permission and posts the result on the commit"
    )
    return 0


def _local(args: argparse.Namespace, repo: str, asked: dict[str, Any]) -> int:
    """Through the stand-in of the running `distkpi local up`, as GitHub would: its
    delivery's answer printed."""
    from distkpi_cli.github_dispatch import ask_dispatch
    from distkpi_cli.local.attach import running
    from distkpi_cli.local.github_standin import RemoteStandIn
    from distkpi_cli.local.state import StateFolder

    up = running(StateFolder(Path(args.state)))
    if up is None:
        raise UsageError(
            "--local needs a running `distkpi local up` (its GitHub stand-in delivers the "
            "accept to its webhook); or replay a `/distkpi accept` comment with "
            "`distkpi local --event`"
        )
    standin = RemoteStandIn(up.github)
    before = len(standin.deliveries)
    ask_dispatch(up.github, repo, str(up.aws["github_token"]), "distkpi-accept", asked)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        deliveries = standin.deliveries
        if len(deliveries) > before:
            answer = deliveries[before]["answer"] or {}
            if args.json:
                print(json.dumps(answer, indent=2))
            else:
                print(answer.get("message", ""))
            return 0 if answer.get("accepted") else FAILURE
        time.sleep(0.1)
    raise UsageError(f"the stand-in delivered nothing in {DELIVERY_TIMEOUT_S}s")


def add(sub: Subcommands) -> None:
    summary = "accept a run's intended regression (its status turns success, with the reason)"
    p = sub.add_parser("accept", help=summary, description=summary)
    p.add_argument("run_id", metavar="RUN_ID", help="the failed run (its check's external id)")
    p.add_argument("--reason", required=True, help="why the regression is intended: kept for audit")
    p.add_argument(
        "--api-url", default=DEFAULT_API, help="GitHub's REST API (default: %(default)s)"
    )
    p.add_argument("--json", action="store_true", help="with --local: print the webhook's answer")
    table_options(p, suite=False)
    p.set_defaults(func=run)
