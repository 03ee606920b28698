"""`distkpi regressions`: the regressions a branch alerted on, each with its state (open,
acknowledged, accepted, fixed), by key (each history's `SERIES` entry names its (repo,
branch, model), whose regressions are one Query); `distkpi regressions ack ID --note TEXT`
acknowledges one."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from distkpi_cli.commands.common import Subcommands, UsageError, open_table, table_options
from distkpi_cli.commands.listing import histories, print_listed

if TYPE_CHECKING:
    from distkpi.domain.regressions import Regression

STATES = ("open", "acknowledged", "accepted", "fixed")
LOCAL_FOLDER = "--local-state"  # --state is the regression's state here


def listed(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo.regressions import RegressionRepository

    with open_table(args) as table:
        repository = RegressionRepository(table)
        keys = histories(table, args.repo, args.model)
        found = [r for key in keys for r in repository.of_branch(*key)]
    found = [r for r in found if args.wanted is None or r.state.value == args.wanted]
    found.sort(key=lambda r: (r.opened_at, r.id))
    return print_listed(
        found, as_json=args.json, to_json=lambda r: r.to_json(), line=_line, none="no regressions"
    )


def _line(r: Regression) -> str:
    value = "-" if r.value is None else f"{r.value:.4g}"
    low = "-" if r.low is None else f"{r.low:.4g}"
    high = "-" if r.high is None else f"{r.high:.4g}"
    last = r.history[-1] if r.history else None
    said = f"  {last.who}: {last.note}" if last is not None and last.note else ""
    culprit = f"  culprit {r.culprit[:10]}" if r.culprit else ""
    return (
        f"{r.opened_at}  {r.state.value:12s} {r.id}  {r.repo} {r.branch}  "
        f"{r.config} {r.kpi} {value} (was {low}..{high}) at {r.sha[:10]}{culprit}{said}"
    )


def ack(args: argparse.Namespace) -> int:
    import getpass

    from distkpi.adapters.dynamo import RunRepository
    from distkpi.adapters.dynamo.regressions import RegressionRepository
    from distkpi.domain.regressions import run_of
    from distkpi.services.regressions import RegressionLedger, RegressionNotFoundError

    run_id = run_of(args.id)
    if run_id is None:
        raise UsageError(f"{args.id!r} is no regression id (<run>:<config>:<kpi>)")
    with open_table(args, write=True) as table:
        run = RunRepository(table).get(run_id)
        if run is None:
            raise UsageError(f"no regression {args.id}: no run {run_id}")
        ledger = RegressionLedger(RegressionRepository(table))
        t = run.trigger
        try:
            who = args.who or getpass.getuser()
            done = ledger.acknowledge(t.repo, t.branch, run.model, args.id, who=who, note=args.note)
        except RegressionNotFoundError as exc:
            raise UsageError(str(exc)) from None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(done.to_json(), indent=2))
    else:
        print(f"{done.id} acknowledged by {done.history[-1].who}: {args.note}")
    return 0


def add(sub: Subcommands) -> None:
    summary = "regressions the branches alerted on, with their state; `ack ID` acknowledges one"
    p = sub.add_parser("regressions", help=summary, description=summary)
    p.add_argument("--state", dest="wanted", choices=STATES, help="only those in this state")
    p.add_argument("--repo", help="owner/name (default: every repository)")
    p.add_argument("--model", help="suite name (default: every suite)")
    p.add_argument("--json", action="store_true", help="print a JSON list of the regressions")
    table_options(p, suite=False, folder_flag=LOCAL_FOLDER)
    p.set_defaults(func=listed)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    about = "acknowledge a regression: someone is on it"
    a = actions.add_parser("ack", help=about, description=about)
    a.add_argument("id", metavar="ID", help="the regression's id, as listed")
    a.add_argument("--note", required=True, help="what is being done: kept in its history")
    a.add_argument("--who", help="who acknowledges (default: the current user)")
    a.add_argument("--json", action="store_true", help="print the regression as JSON")
    table_options(a, suite=False, folder_flag=LOCAL_FOLDER)
    a.set_defaults(func=ack)
