"""`distkpi kpis RUN_DIR`: a run folder's KPIs, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from distkpi.domain.accuracy import Direction, Target, parse_target
from distkpi_cli.commands.common import Subcommands


def run(args: argparse.Namespace) -> int:
    from distkpi.domain.judging.table import render_table
    from distkpi.domain.kpis.runfolder import (
        compute_run_kpis,
        read_run_spec,
        stored_diagnoses,
        with_diagnoses,
    )
    from distkpi_cli.localfs import LocalRunSource

    source = LocalRunSource(Path(args.run_dir))
    direction = Direction(args.accuracy_direction) if args.accuracy_direction else None
    # a person's own folder: files of any size are parsed (the collector caps them)
    run = compute_run_kpis(
        source, args.target_accuracy, args.accuracy_pass, direction, capped=False
    )
    if args.json:
        out = run.to_json()
        # a diagnosis job's, where one stored it in the folder (<config>/diagnosis.json)
        with_diagnoses(out, stored_diagnoses(source, out["configs"]))
        print(json.dumps(out, indent=2))
    else:
        target = args.target_accuracy
        if target is None:
            target = read_run_spec(source).target_accuracy
        print(render_table(run, target))
    return 0


def _target(text: str) -> Target:
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give X or NAME=X[,NAME=X...] ({exc})"
        ) from None


def add(sub: Subcommands) -> None:
    summary = "compute the KPIs of a run folder"
    p = sub.add_parser(
        "kpis",
        help=summary,
        description=f"{summary}: a table, or with --json one object. Exit 0 when the folder "
        "could be read (even with failed configs), 2 when it or a flag is unusable.",
    )
    p.add_argument("run_dir", help="a run folder: run.json and <config>/node-<i>.json")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--target-accuracy",
        type=_target,
        metavar="X|NAME=X[,NAME=X...]",
        help="override run.json's target: a number (within [0, 1] for a higher-is-better "
        "metric), or named parts that must all be reached",
    )
    p.add_argument(
        "--accuracy-direction",
        choices=[d.value for d in Direction],
        help="override run.json's: higher (top-1) or lower (an error rate, a perplexity)",
    )
    p.add_argument(
        "--accuracy-pass",
        type=int,
        metavar="N",
        help="override run.json's: the pass whose test accuracy is reported",
    )
    p.set_defaults(func=run)
