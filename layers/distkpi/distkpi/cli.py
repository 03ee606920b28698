"""The `distkpi` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from distkpi.exceptions import DistkpiError

USAGE_ERROR = 2

Command = Callable[[argparse.Namespace], int]


def _cmd_kpis(args: argparse.Namespace) -> int:
    from distkpi.adapters.localfs import LocalRunSource
    from distkpi.domain.runfolder import compute_run_kpis, read_run_spec
    from distkpi.domain.table import render_table

    source = LocalRunSource(Path(args.run_dir))
    run = compute_run_kpis(source, args.target_accuracy, args.accuracy_pass)
    if args.json:
        print(json.dumps(run.to_json(), indent=2))
    else:
        target = args.target_accuracy
        if target is None:
            target = read_run_spec(source).target_accuracy
        print(render_table(run, target))
    return 0


def _add_kpis(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("kpis", help="compute the KPIs of a run folder")
    p.add_argument("run_dir", help="a run folder: run.json and <config>/node-<i>.json")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--target-accuracy", type=float, help="override run.json's target")
    p.add_argument("--accuracy-pass", type=int, help="override run.json's accuracy pass")
    p.set_defaults(func=_cmd_kpis)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distkpi", description="KPIs of distributed training runs"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_kpis(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except DistkpiError as exc:
        print(f"distkpi {args.command}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
