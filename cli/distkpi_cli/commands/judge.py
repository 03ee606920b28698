"""`distkpi judge`: run folders of one commit judged against a history file, as the
collector judges them; a paired run's folder by its pairs, against the history's paired
differences (its `paired_d` column)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from distkpi_cli.commands.common import Subcommands, UsageError, require

if TYPE_CHECKING:
    from distkpi.domain.contracts import RunSpec
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.judging.history import HistoryRow
    from distkpi.domain.judging.settings import VerdictSettings
    from distkpi.domain.kpis.engine import ConfigKpis


def _commit_runs(run_dirs: Sequence[str]) -> tuple[RunSpec, list[dict[str, ConfigKpis]]]:
    """Run folders of one commit: a spec with every config they hold (the first's first),
    and each folder's configs. UsageError when they are of different commits or models."""
    from distkpi.domain.kpis.runfolder import compute_run_kpis, read_run_spec
    from distkpi_cli.localfs import LocalRunSource

    specs, runs = [], []
    for run_dir in run_dirs:
        source = LocalRunSource(Path(run_dir))
        specs.append(read_run_spec(source))
        runs.append({c.name: c for c in compute_run_kpis(source).configs})
    first = specs[0]
    for attribute in ("repo", "sha", "model"):
        if len({getattr(s, attribute) for s in specs}) > 1:
            named = ", ".join(
                f"{d} is {getattr(s, attribute)}" for s, d in zip(specs, run_dirs, strict=True)
            )
            raise UsageError(f"run folders of different {attribute}s: {named}")
    configs = {c.name: c for s in specs for c in s.configs}
    return first.model_copy(update={"configs": tuple(configs.values())}), runs


def _paired(
    spec: RunSpec,
    runs: Sequence[Mapping[str, ConfigKpis]],
    history: Sequence[HistoryRow],
    resets: Mapping[str, str],
    settings: VerdictSettings,
) -> Evaluation:
    """A paired run folder judged by its pairs against the history's paired differences,
    as the finisher judges it; the run's own pairs setting when the suite has none."""
    from distkpi.domain.judging.paired import evaluate_paired
    from distkpi.domain.judging.settings import PairedSettings
    from distkpi.domain.kpis.engine import run_kpis

    if len(runs) != 1:
        raise UsageError("a paired run is judged on its own: give one run folder")
    assert spec.paired is not None
    if settings.paired is None:
        paired = PairedSettings(max_pairs=spec.paired.max_pairs, warmup=spec.paired.warmup)
        settings = settings.model_copy(update={"paired": paired, "confirm": None})
    return evaluate_paired(
        run_kpis(spec, runs[0]), history, settings, spec.accuracy_tolerance, resets
    )


def run(args: argparse.Namespace) -> int:
    from distkpi.domain.judging.evaluation import evaluate
    from distkpi.domain.judging.settings import VerdictSettings
    from distkpi.domain.judging.table import render_judgements
    from distkpi.domain.kpis.combining import combine
    from distkpi.domain.planning.suites import load_suite
    from distkpi.services.baseline import latest_resets
    from distkpi_cli.history_files import read_history_csv, read_resets_csv

    require(["pandas"], "--history")
    spec, runs = _commit_runs(args.run_dirs)
    history = read_history_csv(Path(args.history))
    resets = latest_resets(read_resets_csv(Path(args.resets))) if args.resets else {}
    settings = load_suite(Path(args.suite)).verdict if args.suite else VerdictSettings()
    if spec.paired is not None:
        evaluation = _paired(spec, runs, history, resets, settings)
    else:
        evaluation = evaluate(
            combine(spec, runs), history, settings, spec.accuracy_tolerance, resets, look=len(runs)
        )
    if args.json:
        print(json.dumps([j.to_json() for j in evaluation.judgements], indent=2))
        return 0
    print(render_judgements(evaluation.judgements))
    print(f"\n{evaluation.verdict.state.value}: {evaluation.description}")
    return 0


def add(sub: Subcommands) -> None:
    summary = (
        "judge run folders of one commit together against a history file, as the collector does"
    )
    p = sub.add_parser("judge", help=summary, description=summary)
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders of one commit")
    p.add_argument("--history", required=True, help="CSV as `distkpi history --format csv` writes")
    p.add_argument("--suite", help="suite whose `verdict:` settings apply (default: all enforced)")
    p.add_argument(
        "--resets",
        help="CSV as `distkpi baseline resets --format csv` writes: the history before each "
        "config's latest reset does not count, as in the collector",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of the judgements")
    p.set_defaults(func=run)
