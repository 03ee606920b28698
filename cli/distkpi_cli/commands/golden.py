"""`distkpi golden --from RUN_FOLDER --runs N`: a golden loss curve from N runs of one
commit, each step's mean, min and max (the A/A way to set the tolerance a suite's
`golden:` file is judged with).

RUN_FOLDER is a folder of run folders (the newest N by name, each its base config's loss
curve) or one paired run folder (its pairs' arms, in the order run: an A/A calibration
measures one commit in both)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path

from distkpi_cli.commands.argtypes import positive_int
from distkpi_cli.commands.common import Subcommands, UsageError


def _curves(folder: Path) -> list[Mapping[int, float]]:
    from distkpi.domain.kpis.runfolder import compute_run_kpis
    from distkpi_cli.localfs import LocalRunSource

    def kpis(path: Path):  # type: ignore[no-untyped-def]
        return compute_run_kpis(LocalRunSource(path), capped=False)

    if (folder / "run.json").is_file():
        run = kpis(folder)
        base = run.config(run.base_config) if run.base_config else run.configs[0]
        arms = [arm for pair in base.pairs for arm in (pair.a, pair.b)]
        return [arm.loss_curve for arm in arms] or [base.loss_curve]
    runs = sorted(p for p in folder.iterdir() if (p / "run.json").is_file())
    curves = []
    for path in runs:
        run = kpis(path)
        base = run.config(run.base_config) if run.base_config else run.configs[0]
        curves.append(base.loss_curve)
    return curves


def run(args: argparse.Namespace) -> int:
    from distkpi.domain.kpis.golden import golden_from

    folder = Path(args.source)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    curves = [c for c in _curves(folder) if c]
    if len(curves) < args.runs:
        raise UsageError(
            f"{args.runs} runs asked, {folder} has {len(curves)} with a training loss curve"
        )
    try:
        golden = golden_from(curves[-args.runs :], args.tolerance)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    text = json.dumps(golden.to_json(), indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return 0


def add(sub: Subcommands) -> None:
    summary = "write a golden loss curve from N runs of one commit"
    p = sub.add_parser("golden", help=summary, description=summary)
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="RUN_FOLDER",
        help="a folder of run folders, or one paired run folder (its pairs' arms)",
    )
    p.add_argument("--runs", type=positive_int, required=True, metavar="N", help="how many runs")
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.02,
        help="relative slack around each step's min..max (default: %(default)s)",
    )
    p.add_argument("--out", help="the file to write (default: standard output)")
    p.set_defaults(func=run)
