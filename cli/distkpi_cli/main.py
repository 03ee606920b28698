"""The `distkpi` command line: one module per command in commands/."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from distkpi.exceptions import ContractError, DistkpiError, RunFolderError
from distkpi_cli.commands import (
    baseline,
    bisections,
    calibrate,
    diagnose,
    history,
    judge,
    kpis,
    local,
    node,
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
    diagnose,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distkpi", description="KPIs of distributed training runs"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except (UsageError, RunFolderError, ContractError) as exc:  # unusable arguments or inputs
        print(f"distkpi {args.command}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except DistkpiError as exc:
        print(f"distkpi {args.command}: {exc}", file=sys.stderr)
        return FAILURE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
