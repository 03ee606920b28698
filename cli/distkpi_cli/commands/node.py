"""`distkpi node`: this node of a benchmark job (the job image's entrypoint)."""

from __future__ import annotations

import argparse

from distkpi_cli.commands.common import Subcommands


def run(args: argparse.Namespace) -> int:
    from distkpi_cli.node.runner import main as run_node

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    return run_node(command)


def add(sub: Subcommands) -> None:
    p = sub.add_parser(
        "node",
        help="run this node of a benchmark job (the job image's entrypoint)",
        description="Check out the commit under test, run the suite's setup, meet the other "
        "nodes, run the command with the frameworks' variables, upload its logs and the node "
        "manifest. The command comes from the suite (DISTKPI_COMMAND) unless given after --.",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND... (optional)")
    p.set_defaults(func=run)
