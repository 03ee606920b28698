"""Bisecting a push's regression through the services on in-memory ports: the bad run's
publication starts it, each step is a linked run of the regressed configs (and the base
config their speedup needs) at the midpoint, and each step's run moves it on."""

from __future__ import annotations

import copy
import json
import math
import random
from typing import Any

import pytest

from distkpi.domain.bisect.deciding import Side
from distkpi.domain.bisect.plan import Bisection, BisectState
from distkpi.domain.github.alerts import AlarmState
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus
from distkpi.domain.records import HistoryRecord, RunStatus
from distkpi.services.looks import PairedLooks
from tests.conftest import assert_golden
from tests.fakes import ROOT, plain_report
from tests.service.pipeline import THROUGHPUT, Pipeline, report_all, start
from tests.service.test_paired_looks import Job

REPO = "PaddlePaddle/Paddle"  # the recorded push delivery's
RECORDED = json.loads((ROOT / "tests" / "data" / "github" / "compare.json").read_text())
GOOD = "6" * 40  # the last of six passing pushes
LINE = [f"{i:x}" * 40 for i in (0xA, 0xB, 0xC, 0xD, 0xE, 0xF)] + ["7" * 40, "8" * 40]
SLOW = "4x8-8ps"


def listed(line: list[str], good: str = GOOD) -> list[dict[str, Any]]:
    """A compare's `commits` for a straight line after ``good``, each entry of the shape
    GitHub gave in the recorded answer (its first commit, with sha, parents and title)."""
    out = []
    for i, sha in enumerate(line):
        entry = copy.deepcopy(RECORDED["commits"][0])
        entry["sha"] = sha
        entry["parents"] = [{"sha": line[i - 1] if i else good}]
        entry["commit"]["message"] = f"Change {i + 1}\n\nWhy it changed."
        out.append(entry)
    return out


def with_history(pipeline: Pipeline) -> None:
    """Six passing pushes, the last of them GOOD."""
    for i in range(6):
        report_all(pipeline, start(pipeline, f"d-{i}", f"{i + 1:x}" * 40))
    assert pipeline.alarms.get(REPO, "develop", "resnet50").last_pass_sha == GOOD


def bisection_of(pipeline: Pipeline, bad_run: str) -> Bisection:
    found = pipeline.bisections.get(REPO, "develop", "resnet50", bad_run)
    assert found is not None
    return found


def run_steps(pipeline: Pipeline, bad_run: str, culprit: int) -> Bisection:
    """Report each step's run as its commit measures: slow from the culprit on."""
    while (b := bisection_of(pipeline, bad_run)).state is BisectState.RUNNING:
        step = b.steps[-1]
        slow = LINE.index(step.sha) >= culprit
        report_all(pipeline, step.run_id, **({SLOW: 0.7} if slow else {}))
    return b


def test_eight_commits_name_the_culprit_in_three_steps() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    statuses_before = len(pipeline.github.statuses)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    assert pipeline.states()[-1][0] == "failure"

    b = bisection_of(pipeline, bad_run)
    assert (b.good, b.bad, b.configs, b.max_runs) == (GOOD, LINE[-1], (SLOW,), 3)
    assert b.line[0].title == "Change 1" and b.line[0].author == "Vincent Jacques"
    assert {e.kpi for e in b.ends} == {"throughput", "speedup", "efficiency"}
    first = pipeline.runs.get(f"{bad_run}-b1")
    assert first is not None and first.spec.sha == LINE[3] and first.bisection == bad_run
    assert [c.name for c in first.spec.configs] == ["1x1", SLOW]  # speedup needs the base

    ended = run_steps(pipeline, bad_run, culprit=5)
    assert ended.state is BisectState.FOUND and ended.culprit == LINE[5]
    assert [(LINE.index(s.sha), s.side) for s in ended.steps] == [
        (3, Side.GOOD),
        (5, Side.BAD),
        (4, Side.GOOD),
    ]
    assert (ended.low, ended.high) == (4, 5)
    # the regressions the alert opened learn the culprit and how the bisection ended
    regressed = pipeline.regressions.of_branch(REPO, "develop", "resnet50")
    assert {(r.kpi, r.culprit, r.diagnosis) for r in regressed} == {
        (kpi, LINE[5], ended.why) for kpi in ("throughput", "speedup", "efficiency")
    }
    # the culprit is marked on the history site where its regression showed
    head = json.loads(
        pipeline.store.objects["site/api/series/PaddlePaddle/Paddle/develop/resnet50.json"]
    )
    (culprit,) = [m for m in head["marks"] if m["kind"] == "culprit"]
    assert (culprit["sha"], culprit["run_id"], culprit["config"]) == (LINE[5], bad_run, SLOW)
    assert culprit["text"].startswith(f"culprit {LINE[5][:10]}: ")
    # each step's GPU-hours are its configs' (none here: these manifests name no hardware)
    assert [s.gpu_hours for s in ended.steps] == [0.0, 0.0, 0.0]
    # the steps posted no status, joined no history and were not superseded
    assert len(pipeline.github.statuses) == statuses_before + 2  # the bad run's two
    shas = {r.sha for r in pipeline.history.history(REPO, "develop", "resnet50")}
    assert not shas & set(LINE[:-1])
    assert all(pipeline.runs.get(s.run_id).status is RunStatus.DONE for s in ended.steps)  # type: ignore[union-attr]


def test_an_error_step_is_retried_once_then_inconclusive() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    for number in (1, 2):
        step = f"{bad_run}-b{number}"
        run = pipeline.runs.get(step)
        assert run is not None and run.spec.sha == LINE[3]
        pipeline.settler.fail_config(step, SLOW, "Host EC2 terminated")
        pipeline.settler.fail_config(step, "1x1", "Host EC2 terminated")
    b = bisection_of(pipeline, bad_run)
    assert b.state is BisectState.INCONCLUSIVE and b.culprit is None
    assert [s.side for s in b.steps] == [Side.ERROR, Side.ERROR]
    assert b.why == f"the step at {LINE[3][:10]} ended error twice"
    assert (b.low, b.high) == (-1, 7)
    assert pipeline.runs.get(f"{bad_run}-b3") is None


def test_a_newer_push_while_bisecting_cancels_the_older_bisection_and_its_step() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    older = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, older, **{SLOW: 0.7})
    running = f"{older}-b1"
    assert pipeline.runs.get(running) is not None

    newer_head = "9" * 40
    pipeline.github.commits[(GOOD, newer_head)] = listed([*LINE, newer_head])
    newer = start(pipeline, "d-newer", newer_head)
    report_all(pipeline, newer, **{SLOW: 0.4})

    old = bisection_of(pipeline, older)
    assert old.state is BisectState.CANCELLED
    assert old.why == f"cancelled: a newer bisection, of {newer_head[:10]}, covers it"
    cancelled = pipeline.runs.get(running)
    assert cancelled is not None and cancelled.status is RunStatus.CANCELLED
    stopped = {pipeline.launcher.submitted[j].run_id for j in pipeline.launcher.terminated}
    assert stopped == {running}
    new = bisection_of(pipeline, newer)
    assert new.state is BisectState.RUNNING and len(new.line) == 9
    assert new.steps[0].sha == LINE[3]
    # the cancelled step's nodes reporting late move nothing
    report_all(pipeline, running)
    assert bisection_of(pipeline, older).steps == old.steps


def test_a_suite_that_does_not_bisect_starts_nothing() -> None:
    pipeline = Pipeline(draw=plain_report)
    suite = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    pipeline.store.put_bytes(
        "suites/resnet50.yaml", (suite + "bisect: {enabled: false}\n").encode()
    )
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    assert pipeline.bisections.stored == {}
    assert f"compare commits {GOOD}...{LINE[-1]}" not in pipeline.github.asked


def test_one_commit_since_the_good_one_starts_nothing() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[0])] = listed(LINE[:1])
    report_all(pipeline, start(pipeline, "d-bad", LINE[0]), **{SLOW: 0.7})
    assert f"compare commits {GOOD}...{LINE[0]}" in pipeline.github.asked
    assert pipeline.bisections.stored == {}


def test_a_compare_github_cannot_answer_starts_nothing_and_the_status_goes_out() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)  # GitHub knows no such range: 404
    report_all(pipeline, start(pipeline, "d-bad", LINE[-1]), **{SLOW: 0.7})
    assert pipeline.bisections.stored == {}
    assert pipeline.counts.totals["BisectionsNotStarted"] == 1
    assert pipeline.states()[-1][0] == "failure"


def test_the_alert_and_the_check_run_name_the_culprit_in_the_golden_texts() -> None:
    pipeline = Pipeline(checks=True, draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    assert len(pipeline.topic.messages) == 1  # the regression, as before
    run_steps(pipeline, bad_run, culprit=5)
    subject, body = pipeline.topic.messages[-1]
    assert subject == "distkpi: resnet50 on PaddlePaddle/Paddle develop bisected: ffffffffff"
    assert_golden("bisection_alert.txt", body)
    (check,) = [c for c in pipeline.github.checks.values() if c["head_sha"] == LINE[-1]]
    assert check["conclusion"] == "failure"
    assert_golden("bisection_check_summary.md", check["output"]["summary"])
    assert all(c["head_sha"] not in LINE[:-1] for c in pipeline.github.checks.values())


def test_an_inconclusive_bisection_alerts_with_the_range_it_narrowed_to() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    report_all(pipeline, f"{bad_run}-b1", **{SLOW: 0.7})  # LINE[3] bad
    for number in (2, 3):  # LINE[1] fails twice
        for config in ("1x1", SLOW):
            pipeline.settler.fail_config(f"{bad_run}-b{number}", config, "Host EC2 terminated")
    subject, body = pipeline.topic.messages[-1]
    assert subject.endswith("bisected: inconclusive")
    assert_golden("bisection_inconclusive_alert.txt", body)


PAIRED_SUITE = b"""name: resnet50
command: ["python", "reference.py"]
target_accuracy: 0.6
accuracy_pass: 4
accuracy_tolerance: 0.001
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 64}
  - {name: 1x8, trainers: 1, gpus_per_trainer: 8, pservers: 0, batch_size: 512}
verdict:
  enforced: [throughput, speedup, efficiency]
  paired: {max_pairs: 4, warmup: true}
"""


def paired_history(pipeline: Pipeline) -> str:
    """30 earlier paired pushes (their first pairs' d), the last of them passing: GOOD."""
    rng = random.Random(11)
    for i in range(30):
        created = f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"
        for name, gpus in (("1x1", 1), ("1x8", 8)):
            kpis = ConfigKpis(
                name, gpus, ConfigStatus.OK, THROUGHPUT[name], 60.0, 0.7, 9e3, None, ()
            )
            paired = {"throughput": rng.gauss(0, 0.03)}
            if gpus > 1:
                paired |= {"speedup": rng.gauss(0, 0.04), "efficiency": rng.gauss(0, 0.04)}
            pipeline.history.put([HistoryRecord(
                REPO, "develop", "resnet50", name, f"{i:040x}", f"past-{i}", created, created,
                kpis, paired=paired,
            )])  # fmt: skip
    good = f"{29:040x}"
    pipeline.alarms.put(REPO, "develop", "resnet50", AlarmState(last_pass_sha=good))
    return good


def run_paired(pipeline: Pipeline, looks: PairedLooks, run_id: str, slow: bool) -> None:
    """Each config's job pair by pair until its look says stop; B of 1x8 25% slower."""
    run = pipeline.runs.get(run_id)
    assert run is not None
    for config in [c.name for c in run.spec.configs]:
        job = Job(pipeline, looks, run_id, config)
        scale = {"b": 0.75} if slow and config == "1x8" else {}
        for pair in range(1, 5):
            decision = job.pair(pair, **scale)
            if decision is None or decision["decision"] == "stop":
                break
        job.end()


def test_a_paired_suite_bisects_by_a_b_runs_of_the_good_commit_against_each_midpoint() -> None:
    pipeline = Pipeline(draw=plain_report)
    del pipeline.store.objects["suites/resnet50.yaml"]
    pipeline.store.put_bytes("suites/resnet50.yaml", PAIRED_SUITE)
    looks = pipeline.looks
    good = paired_history(pipeline)
    line = list(LINE)
    pipeline.github.commits[(good, line[-1])] = listed(line, good)
    pipeline.github.parents[line[-1]] = (line[-2],)
    bad_run = start(pipeline, "d-bad", line[-1])
    run_paired(pipeline, looks, bad_run, slow=True)
    assert pipeline.states()[-1][0] == "failure", pipeline.states()[-1]
    b = bisection_of(pipeline, bad_run)
    assert b.paired and b.configs == ("1x8",) and b.runs_configs == ("1x8",)
    (throughput,) = b.ends  # the head's pairs regressed its throughput
    assert throughput.good == 0.0 and throughput.bad == pytest.approx(math.log(0.75))
    while (b := bisection_of(pipeline, bad_run)).state is BisectState.RUNNING:
        step = pipeline.runs.get(b.steps[-1].run_id)
        assert step is not None and step.spec.paired is not None
        assert step.spec.paired.base_sha == good  # arm A: the good commit, arm B the midpoint
        run_paired(pipeline, looks, step.run_id, slow=line.index(step.spec.sha) >= 2)
    assert b.state is BisectState.FOUND and b.culprit == line[2], b.why
    assert [(line.index(s.sha), s.side) for s in b.steps] == [
        (3, Side.BAD),
        (1, Side.GOOD),
        (2, Side.BAD),
    ]
    assert b.steps[0].values["1x8/throughput"] == pytest.approx(math.log(0.75))


def test_a_bisection_that_ends_after_an_accept_leaves_the_check_accepted_with_both() -> None:
    from distkpi.domain.github.acceptance import Acceptance, Via

    pipeline = Pipeline(checks=True, draw=plain_report)
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    bad = pipeline.runs.get(bad_run)
    assert bad is not None and bad.evaluation is not None
    kpis = tuple((SLOW, k) for k in ("throughput", "speedup", "efficiency"))
    acceptance = Acceptance(
        "octocat", "2026-12-02T10:00:00Z", "a slower kernel, meant", Via.COMMENT, kpis
    )
    assert pipeline.runs.accept(bad_run, acceptance)
    accepted = pipeline.runs.get(bad_run)
    assert accepted is not None and pipeline.statuses.accepted(accepted)

    ended = run_steps(pipeline, bad_run, culprit=5)

    assert ended.state is BisectState.FOUND
    (check,) = [c for c in pipeline.github.checks.values() if c["external_id"] == bad_run]
    summary = check["output"]["summary"]
    assert check["conclusion"] == "success"  # the bisection's post does not undo the accept
    # (GitHub would make "@octocat" a mention: a zero-width space keeps it plain text)
    assert check["output"]["title"] == "accepted by @\u200boctocat: a slower kernel, meant"
    assert summary.index("### Bisection") < summary.index("### Accepted")
    assert LINE[5][:10] in summary  # the culprit named
