"""A check run's markdown, pinned by a golden file: a run of the seed's example folder whose
4x8-8ps regressed against a steady history."""

from __future__ import annotations

import os
import random
from dataclasses import replace
from pathlib import Path

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.github.check_summary import MAX_OUTPUT, summary_markdown
from distkpi.domain.github.checks import conclusion_of
from distkpi.domain.judging.evaluation import Evaluation, evaluate
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.settings import KPIS, VerdictSettings
from distkpi.domain.kpis.engine import RunKpis
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.localfs import LocalRunSource

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "check_summary.md"
REPORT = "https://abc.lambda-url.us-east-1.on.aws/reports/seed?exp=1&sig=0"


def seed_run() -> RunKpis:
    run = compute_run_kpis(LocalRunSource(ROOT / "examples" / "seed-run"))
    configs = tuple(
        replace(c, hardware="p4d.24xlarge/NVIDIA A100-SXM4-40GB", gpu_hours=c.gpus * 0.5)
        for c in run.configs
    )
    return replace(run, configs=configs)


def regressed_evaluation() -> Evaluation:
    """The seed run judged against 12 earlier runs in which 4x8-8ps was 30% faster."""
    run = seed_run()
    rng = random.Random(3)
    rows = []
    for i in range(12):
        for config in run.configs:
            values = config.to_json()
            for kpi in KPIS:
                value = values[kpi]
                if value is None:
                    continue
                if config.name == "4x8-8ps" and kpi in ("throughput", "speedup", "efficiency"):
                    value *= 1.3
                noisy = value if kpi == "test_accuracy" else value * (1 + 0.01 * rng.gauss(0, 1))
                rows.append(
                    HistoryRow(
                        f"2026-11-{i + 1:02d}T00:00:00",
                        "PaddlePaddle/Paddle",
                        "develop",
                        run.model,
                        config.name,
                        f"{i:040x}",
                        f"r{i}",
                        kpi,
                        noisy,
                        hardware=config.hardware,
                    )
                )
    return evaluate(run, rows, VerdictSettings(), accuracy_tolerance=0.001)


def test_the_summary_of_a_regression_is_the_golden_markdown() -> None:
    evaluation = regressed_evaluation()
    assert evaluation.verdict.state is State.FAILURE
    markdown = summary_markdown(evaluation, REPORT, target_accuracy=0.6)
    if os.environ.get("DISTKPI_UPDATE_GOLDEN") == "1":  # to accept a change on purpose
        GOLDEN.write_text(markdown)
    assert markdown == GOLDEN.read_text()


def test_problems_are_cut_first_to_stay_under_githubs_limit() -> None:
    evaluation = regressed_evaluation()
    many = tuple(f"problem {i}: " + "x" * 200 for i in range(1000))
    configs = tuple(replace(c, problems=many) for c in evaluation.kpis.configs)
    flooded = replace(evaluation, kpis=replace(evaluation.kpis, configs=configs))
    markdown = summary_markdown(flooded, REPORT, target_accuracy=0.6)
    assert len(markdown) <= MAX_OUTPUT
    assert markdown.startswith("| KPI | 1x1 | 1x8 | 2x8-4ps | 4x8-8ps |")
    assert "**Verdict: failure**" in markdown and f"[Full report]({REPORT})" in markdown
    assert markdown.endswith("(truncated: the report has everything)")


@pytest.mark.parametrize(
    ("state", "description", "conclusion", "title"),
    [
        (State.PENDING, "running 4 config(s)", None, "running 4 config(s)"),
        (State.SUCCESS, "ok", "success", "ok"),
        (State.FAILURE, "4x8-8ps tput -25%", "failure", "4x8-8ps tput -25%"),
        (
            State.ERROR,
            "1x8 failed: job failed",
            "failure",
            "infrastructure error: 1x8 failed: job failed",
        ),
        (State.ERROR, "cancelled: superseded by abc", "cancelled", "cancelled: superseded by abc"),
    ],
)
def test_an_infrastructure_error_fails_the_check_never_neutral(
    state: State, description: str, conclusion: str | None, title: str
) -> None:
    assert conclusion_of(state, description) == (conclusion, title)
