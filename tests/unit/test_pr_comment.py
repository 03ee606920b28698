"""The pull request's comment, pinned by golden files: the seed run whose 4x8-8ps regressed
(the first post), the same run passing, a run of hostile strings, the regressed run once
accepted; and when a suite's `comment:` writes it."""

from __future__ import annotations

import os
import random
from dataclasses import replace
from pathlib import Path

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.github.acceptance import Acceptance, Via, accepted_markdown
from distkpi.domain.github.comment_mode import CommentMode
from distkpi.domain.github.pr_comment import (
    ACCEPT_HINT,
    CommentFacts,
    marker,
    outcome_of,
    pull_request_comment,
    should_write,
)
from distkpi.domain.judging.evaluation import evaluate
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.untrusted import ZERO_WIDTH
from tests.conftest import RunBuilder
from tests.unit.test_check_summary import REPORT, history_of, regressed_evaluation, seed_run
from tests.unit.test_hostile_text import hostile_evaluation

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
FACTS = CommentFacts("resnet50", "PaddlePaddle/Paddle", SHA, "run-0042", REPORT)


def golden(name: str, text: str) -> str:
    if os.environ.get("DISTKPI_UPDATE_GOLDEN") == "1":  # to accept a change on purpose
        (GOLDEN / name).write_text(text)
    return (GOLDEN / name).read_text()


def steady_evaluation():
    """The seed run against 12 earlier runs just like it: every KPI within its range."""
    run = seed_run()

    def earlier(config: str, kpi: str, value: float, rng: random.Random) -> float:
        del config
        return value if kpi == "test_accuracy" else value * (1 + 0.01 * rng.gauss(0, 1))

    return evaluate(run, history_of(run, earlier, seed=3), VerdictSettings(), 0.001)


def test_the_first_comment_on_a_regression_is_the_golden_markdown() -> None:
    evaluation = regressed_evaluation()
    comment = pull_request_comment(evaluation, FACTS)
    assert comment.body == golden("pr_comment_regressed.md", comment.body)
    lines = comment.body.splitlines()
    assert lines[0] == "<!-- distkpi:suite=resnet50 -->" == marker("resnet50")
    # regressions first: the three regressed KPIs are the open table, the rest folded
    rows = [line for line in lines if line.startswith(("| 1x", "| 2x", "| 4x"))]
    assert [r.split(" | ")[1] for r in rows[:3]] == [
        "throughput (samples/s)",
        "speedup",
        "efficiency",
    ]
    assert all(r.startswith("| 4x8-8ps") and "regressed" in r for r in rows[:3])
    assert not any("regressed" in row for row in rows[3:])
    assert lines.index(
        "<details><summary>25 KPI value(s) within range or without a baseline</summary>"
    ) > lines.index(rows[2])
    assert f"Intended? {ACCEPT_HINT}." in lines
    assert ACCEPT_HINT == "comment `/distkpi accept <reason>` to accept (writers only)"


def test_a_passing_run_shows_no_accept_hint() -> None:
    evaluation = steady_evaluation()
    assert evaluation.verdict.state is State.SUCCESS
    comment = pull_request_comment(evaluation, FACTS)
    assert comment.body == golden("pr_comment_success.md", comment.body)
    assert "/distkpi accept" not in comment.body


def test_the_comment_of_a_hostile_run_is_neutral(run_builder: RunBuilder) -> None:
    evaluation = hostile_evaluation(run_builder)
    comment = pull_request_comment(evaluation, replace(FACTS, report_url=None))
    assert comment.body == golden("hostile_pr_comment.md", comment.body)
    assert f"@{ZERO_WIDTH}org" in comment.body and "@org" not in comment.body
    assert "<img" not in comment.body and "<details>" not in comment.body
    assert "\n## Approved" not in comment.body and "https://ev.il" not in comment.body


@pytest.mark.parametrize(
    ("mode", "shown", "writes"),
    [
        (CommentMode.ON_CHANGE, None, True),  # the first finished run posts it
        (CommentMode.ON_CHANGE, "same", False),  # an unchanged outcome: no edit
        (CommentMode.ON_CHANGE, "other", True),
        (CommentMode.ALWAYS, "same", True),
        (CommentMode.NEVER, None, False),
    ],
)
def test_when_a_suites_comment_is_written(
    mode: CommentMode, shown: str | None, writes: bool
) -> None:
    assert should_write(mode, shown, "same") is writes


def test_the_outcome_moves_with_the_verdict_and_judgements_not_with_the_numbers() -> None:
    regressed, steady = regressed_evaluation(), steady_evaluation()
    assert outcome_of(regressed) != outcome_of(steady)
    nudged = replace(
        regressed,
        judgements=tuple(
            replace(j, value=j.value * 1.001 if j.value is not None else None)
            for j in regressed.judgements
        ),
    )
    assert outcome_of(nudged) == outcome_of(regressed)


def test_a_flood_of_problems_is_cut_to_stay_under_githubs_limit() -> None:
    evaluation = regressed_evaluation()
    many = tuple(f"problem {i}: " + "x" * 200 for i in range(1000))
    configs = tuple(replace(c, problems=many) for c in evaluation.kpis.configs)
    flooded = replace(evaluation, kpis=replace(evaluation.kpis, configs=configs))
    body = pull_request_comment(flooded, FACTS).body
    assert len(body) < 65_536
    assert "- … and 3980 more in the report" in body


def test_a_diagnosis_job_adds_why_under_the_table_and_changes_the_outcome() -> None:
    evaluation = regressed_evaluation()
    before = pull_request_comment(evaluation, FACTS)
    line = "4x8-8ps throughput -25%: communication +38% per step (all_reduce 2.1 -> 2.9 ms)"
    after = pull_request_comment(evaluation, FACTS, diagnoses=[line, "<b>*bold*</b>"])
    lines = after.body.splitlines()
    why = lines.index("**Why it changed** (profiled base and head):")
    # neutralised as every log-derived string (GitHub renders it as the line itself)
    assert lines[why + 2] == (
        r"- 4x8-8ps throughput -25%: communication +38% per step (all\_reduce 2.1 -\> 2.9 ms)"
    )
    assert "<b>" not in after.body  # a diagnosis names operations a program chose
    assert why > max(i for i, x in enumerate(lines) if x.startswith("| 4x8-8ps"))
    # on_change edits the comment once the diagnosis is in
    assert after.outcome != before.outcome


def test_an_accepted_run_says_who_accepted_it_and_why_as_its_check_run_does() -> None:
    evaluation = regressed_evaluation()
    kpis = (("4x8-8ps", "throughput"), ("4x8-8ps", "speedup"), ("4x8-8ps", "efficiency"))
    reason = "trades 8% throughput for 30% less GPU memory"
    acceptance = Acceptance("octocat", "2026-11-30T03:00:00+00:00", reason, Via.COMMENT, kpis)

    comment = pull_request_comment(evaluation, FACTS, acceptance=acceptance)

    assert comment.body == golden("pr_comment_accepted.md", comment.body)
    lines = comment.body.splitlines()
    assert lines[1] == "### distkpi/resnet50: success"
    assert lines[3] == f"**accepted by @{ZERO_WIDTH}octocat: {reason}**"
    assert comment.body.endswith(accepted_markdown(acceptance).lstrip("\n"))
    assert ACCEPT_HINT not in comment.body and "🔻 **regressed**" in comment.body
    # on_change sees the acceptance: the comment of the same evaluation is edited
    assert comment.outcome != pull_request_comment(evaluation, FACTS).outcome
