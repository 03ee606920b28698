"""The `distkpi` command line: one module per command in commands/. A command module imports
at its top only the standard library and what its flags need (no pydantic, numpy or AWS);
what its command uses is imported when it runs, so `distkpi --help` and `distkpi kpis` pay
for nothing else (tests/unit/test_cold_start_imports.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from distkpi import __version__
from distkpi.exceptions import ContractError, DistkpiError, RunFolderError
from distkpi_cli.commands import (
    accept,
    baseline,
    bisections,
    calibrate,
    diagnose,
    golden,
    history,
    judge,
    kpis,
    local,
    node,
    regressions,
    report,
    runs,
    site,
)
from distkpi_cli.commands.common import FAILURE, USAGE_ERROR, UsageError

Command = Callable[[argparse.Namespace], int]
COMMANDS = (
    kpis,
    local,
    node,
    judge,
    history,
    baseline,
    calibrate,
    report,
    runs,
    site,
    bisections,
    regressions,
    accept,
    golden,
    diagnose,
)


class BadArguments(Exception):
    """argparse refused the command line; ``parser`` is the (sub)command it was refused by."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """argparse's parser, except that a mistake is raised to main(), which says it once."""

    def error(self, message: str) -> NoReturn:
        raise BadArguments(self, message)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; given the name of a command, only that command's parser under
    the top one: `distkpi COMMAND ...` builds no other command's options."""
    parser = Parser(
        prog="distkpi",
        description="KPIs of distributed training runs: compute, judge and browse them, and "
        "run the whole pipeline on this machine (distkpi COMMAND --help for each)",
    )
    parser.add_argument("--version", action="version", version=f"distkpi {__version__}")
    sub = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")
    named = [c for c in COMMANDS if c.__name__.rpartition(".")[2] == command]
    for module in named or COMMANDS:
        module.add(sub)
    return parser


def leaf_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Parser:
    """The (sub)command's own parser that ``args`` were parsed by: `distkpi baseline reset`'s
    for `distkpi baseline reset ...`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return leaf_parser(chosen, args)
    assert isinstance(parser, Parser)
    return parser


def _say(prog: str, message: str, as_json: bool) -> None:
    """One line on stderr; with --json also the one JSON document on stdout."""
    if as_json:
        print(json.dumps({"error": f"{prog}: {message}"}))
    print(f"{prog}: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    as_json = "--json" in argv
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            leaf_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    except BadArguments as exc:
        exc.parser.print_usage(sys.stderr)
        _say(exc.parser.prog, f"{exc}", as_json)
        return USAGE_ERROR
    prog = leaf_parser(parser, args).prog
    as_json = bool(getattr(args, "json", False))
    func: Command = args.func
    try:
        return func(args)
    except (UsageError, RunFolderError, ContractError) as exc:  # unusable arguments or inputs
        _say(prog, str(exc), as_json)
        return USAGE_ERROR
    except DistkpiError as exc:
        _say(prog, str(exc), as_json)
        return FAILURE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
