"""Markdown and text injection: a pull request's code writes its own logs and manifests, so
every string taken from them reaches GitHub and alerts only neutralised. Golden files pin
the whole texts a run with hostile strings produces."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.github.alerts import Alerted, alert_message
from distkpi.domain.github.check_summary import problems_text, summary_markdown
from distkpi.domain.github.checks import CheckRun, conclusion_of
from distkpi.domain.judging.evaluation import Evaluation, evaluate
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.domain.untrusted import ZERO_WIDTH, neutral
from distkpi_cli.localfs import LocalRunSource
from tests.conftest import RunBuilder, mllog

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
# an MLLOG run_stop status is cut at 40 characters: this one fits, newline and all
RUN_STOP = "\n# ✅ ok @org/team [x](https://ev.il)"
GPU_MODEL = "A100<img src=x onerror=alert(1)> | **b** `c` $\\color{red}X$ ![i](http://e.vil/p.png)"
PROBLEM = "setup failed\r\n\n## Approved ✅\n<details>@octocat</details> www.evil.example #1\u202e"
MISSING = "logs/@org_team #12 [a](https:x).log"


def hostile_folder(run_builder: RunBuilder) -> RunBuilder:
    log = (
        "\n".join(
            [
                mllog("run_start", None, time_ms=1000),
                mllog("tracked_stats", {"throughput": 100.0}, time_ms=2000),
                mllog("run_stop", None, time_ms=3000, status=RUN_STOP),
            ]
        )
        + "\n"
    )
    hardware = {"instance_type": "p4d.24xlarge", "gpu_model": GPU_MODEL, "gpu_count": 8}
    run_builder.config("1x1").config("1x8", gpus=8)
    run_builder.node("1x1", 0, [("trainer-0.log", "trainer", 0, "log", log)], hardware=hardware)
    run_builder.node("1x8", 0, [], exit_code=1, problem=PROBLEM)
    manifest = run_builder.root / "1x8" / "node-0.json"
    named = json.loads(manifest.read_text())
    named["files"] = [{"path": MISSING, "role": "trainer", "rank": 0, "kind": "log"}]
    manifest.write_text(json.dumps(named))
    return run_builder


def hostile_evaluation(run_builder: RunBuilder) -> Evaluation:
    run = compute_run_kpis(LocalRunSource(hostile_folder(run_builder).root))
    return evaluate(run, [], VerdictSettings(), accuracy_tolerance=0.001)


def golden(name: str, text: str) -> str:
    if os.environ.get("DISTKPI_UPDATE_GOLDEN") == "1":  # to accept a change on purpose
        (GOLDEN / name).write_text(text)
    return (GOLDEN / name).read_text()


def test_the_check_of_a_hostile_run_is_the_golden_markdown(run_builder: RunBuilder) -> None:
    evaluation = hostile_evaluation(run_builder)
    assert evaluation.verdict.state is State.ERROR
    markdown = summary_markdown(evaluation, None, target_accuracy=0.6)
    assert markdown == golden("hostile_check_summary.md", markdown)
    text = problems_text(evaluation.kpis.configs) or ""
    assert text == golden("hostile_check_text.md", text)


def test_the_title_and_status_of_a_hostile_run_are_one_plain_line(
    run_builder: RunBuilder,
) -> None:
    evaluation = hostile_evaluation(run_builder)
    conclusion, title = conclusion_of(evaluation.verdict.state, evaluation.description)
    check = CheckRun("distkpi/mnist", "0" * 40, "run-1", "completed", title, "", conclusion)
    sent = check.body()["output"]["title"]
    status = neutral(evaluation.description)
    assert f"{sent}\n{status}\n" == golden("hostile_title_and_status.txt", f"{sent}\n{status}\n")


def test_an_alert_quoting_a_hostile_description_is_plain_text(run_builder: RunBuilder) -> None:
    evaluation = hostile_evaluation(run_builder)
    failed = replace(
        evaluation,
        verdict=replace(evaluation.verdict, state=State.FAILURE, reasons=(f"1x8 acc Δ {PROBLEM}",)),
    )
    message = alert_message(
        failed,
        Alerted("org/repo", "develop", "mnist", "a" * 40),
        ["1x8"],
        last_pass_sha=None,
        web_url="https://github.com",
        report_url=None,
    )
    assert message.body == golden("hostile_alert.txt", message.body)


@pytest.mark.parametrize(
    ("hostile", "plain", "markdown"),
    [
        ("a\nb\tc\x00d\u2028e", "a b c d e", "a b c d e"),
        ("@org/team", f"@{ZERO_WIDTH}org/team", f"@{ZERO_WIDTH}org/team"),
        ("see #12", f"see #{ZERO_WIDTH}12", f"see \\#{ZERO_WIDTH}12"),
        ("https://e.vil", f"https:{ZERO_WIDTH}//e.vil", f"https:{ZERO_WIDTH}//e.vil"),
        ("www.e.vil", f"www{ZERO_WIDTH}.e.vil", f"www{ZERO_WIDTH}.e.vil"),
        ("<img src=x>", "<img src=x>", "\\<img src=x\\>"),
        ("[a](b) *c* _d_ `e` |f| ~g~ $h$ &i; !j", None, None),
        ("1.5 GPUs (+5%) ok: a-b", "1.5 GPUs (+5%) ok: a-b", "1.5 GPUs (+5%) ok: a-b"),
    ],
)
def test_each_kind_of_hostile_string(hostile: str, plain: str | None, markdown: str | None) -> None:
    if plain is not None:
        assert neutral(hostile) == plain
    if markdown is not None:
        assert neutral(hostile, markdown=True) == markdown
    escaped = neutral(hostile, markdown=True)
    for character in "[]*_`|~$&!<>":
        assert escaped.count(character) == escaped.count("\\" + character)
