"""`distkpi diagnose RUN_FOLDER`: profiler traces of base and head (RUN_FOLDER/base,
RUN_FOLDER/head) reduced to where a step's time went, and the part that changed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from distkpi_cli.commands.common import Subcommands


def run(args: argparse.Namespace) -> int:
    from distkpi_cli.diagnosis.compare import summary
    from distkpi_cli.diagnosis.folder import diagnose_folder

    diagnosis = diagnose_folder(Path(args.run_folder))
    if args.json:
        print(json.dumps({"diagnosis": diagnosis.to_json()}, indent=2))
    else:
        print(summary(diagnosis))
    return 0


def add(sub: Subcommands) -> None:
    summary = (
        "why a run regressed: base and head traces reduced to compute, communication, "
        "idle and data per step"
    )
    p = sub.add_parser("diagnose", help=summary, description=summary)
    p.add_argument(
        "run_folder",
        metavar="RUN_FOLDER",
        help="holds base/ and head/, each with a folder of traces per role "
        "(docs/how-to/diagnose.md)",
    )
    p.add_argument("--json", action="store_true", help="the diagnosis contract as JSON")
    p.set_defaults(func=run)
