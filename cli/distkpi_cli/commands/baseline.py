"""`distkpi baseline reset` and `distkpi baseline resets`: audited baseline resets."""

from __future__ import annotations

import argparse

from distkpi_cli.commands.common import Subcommands, open_table, table_options


def reset(args: argparse.Namespace) -> int:
    import getpass
    from datetime import UTC, datetime

    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi.domain.records import ResetRecord

    at = datetime.now(UTC).isoformat(timespec="seconds")
    who = args.who or getpass.getuser()
    reset = ResetRecord(args.repo, args.branch, args.model, args.config, args.reason, who, at)
    with open_table(args, write=True) as table:
        HistoryRepository(table).record_reset(reset)
    print(
        f"baseline of {args.repo} {args.branch} {args.model} {args.config} reset at {at} by {who}"
    )
    return 0


def resets(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi_cli.history_files import write_resets

    with open_table(args) as table:
        resets = HistoryRepository(table).resets(args.repo, args.branch, args.model)
    write_resets(resets, args.format)
    return 0


def add(sub: Subcommands) -> None:
    summary = "audited baseline resets: make one, or list them"
    b = sub.add_parser("baseline", help=summary, description=summary).add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    about = "start a config's baseline afresh after an intended change"
    r = b.add_parser("reset", help=about, description=about)
    table_options(r)
    r.add_argument("--config", required=True, help="config name, or * for all")
    r.add_argument("--reason", required=True, help="why: kept with the reset for audit")
    r.add_argument("--who", help="who resets (default: the current user)")
    r.set_defaults(func=reset)
    about = "the audited resets of a (repo, branch, model)"
    listed = b.add_parser("resets", help=about, description=about)
    table_options(listed)
    listed.add_argument(
        "--format",
        choices=("table", "csv", "json"),
        default="table",
        help="csv is what `distkpi judge --resets` reads (default: %(default)s)",
    )
    listed.set_defaults(func=resets)
