"""A regression's diagnosis job through the services on in-memory ports: the regressed
run's publication starts it (one pair, the base then the head, profiled), its nodes' traces
(real PyTorch profiler traces, tests/data/traces) are reduced when its last node is in, and
the diagnosis is stored with the run it diagnoses: its folder, its kpis.json, its report,
its check run and its alert say why."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from distkpi.domain.layout import config_prefix, diagnosis_key, kpis_key
from distkpi.domain.records import RunStatus
from distkpi.domain.signing import sign
from tests.conftest import assert_golden
from tests.fakes import ROOT, plain_report
from tests.service.pipeline import Pipeline, report_all, start
from tests.service.test_bisection import GOOD, LINE, REPO, listed, run_steps
from tests.service.test_bisection import SLOW as BISECTED
from tests.service.test_paired_looks import files_of, manifest

TRACES = ROOT / "tests" / "data" / "traces" / "trace_diff"
SLOW = "1x8"  # one node: its trainer's traces are the diagnosis


def cloned(pipeline: Pipeline, extra: str = "") -> Pipeline:
    """The pipeline with resnet50's code checked out of its repository (a job of two
    commits cannot run the code an image holds), and ``extra`` suite text."""
    text = pipeline.store.objects["suites/resnet50.yaml"].decode()
    text = text.replace("source: none", "source: https://github.com/{repo}.git") + extra
    pipeline.store.put_bytes("suites/resnet50.yaml", text.encode())
    return pipeline


def with_history(pipeline: Pipeline) -> None:
    for i in range(6):
        report_all(pipeline, start(pipeline, f"d-{i}", f"{i + 1:x}" * 40))


def regressed(pipeline: Pipeline) -> str:
    with_history(pipeline)
    bad_run = start(pipeline, "d-bad", "8" * 40)
    report_all(pipeline, bad_run, **{SLOW: 0.7})
    run = pipeline.runs.get(bad_run)
    assert run is not None and run.evaluation is not None
    assert run.evaluation.verdict.state.value == "failure"
    return bad_run


# two ranks of one 128-GPU run (HTA's trace_filter): small, and no part changed between them
SAMPLED = (
    ROOT / "tests" / "data" / "traces" / "trace_filter" / "sampled_rank-0.json.gz",
    ROOT / "tests" / "data" / "traces" / "trace_filter" / "sampled_rank-1.json.gz",
)


def run_diagnosis_job(
    pipeline: Pipeline,
    run_id: str,
    config: str,
    traces: tuple[Path, Path] = (TRACES / "control.json.gz", TRACES / "test.json.gz"),
) -> None:
    """What `distkpi node` leaves of a diagnosis job: the pair's logs, and each trainer's
    trace of each arm under files/<role>-<rank>/profile/, then the manifest, signed."""
    key = pipeline.keys.for_config(run_id, config)
    nodes = pipeline.runs.get(run_id).spec.config(config).nodes  # type: ignore[union-attr]
    for node in range(nodes):
        files: list[Any] = files_of(pipeline, run_id, config, node, 1)
        for arm, trace in zip("ab", traces, strict=True):
            body = trace.read_bytes()
            path = f"pair-1/{arm}/files/trainer-{node}/profile/rank-{node}.json.gz"
            pipeline.store.put_bytes(config_prefix(run_id, config) + path, body)
            files.append({"path": path, "role": "trainer", "rank": node, "kind": "file",
                          "sha256": hashlib.sha256(body).hexdigest()})  # fmt: skip
        final = sign(key, manifest(run_id, config, node, files))
        pipeline.store.put_bytes(
            f"{config_prefix(run_id, config)}node-{node}.json", json.dumps(final).encode()
        )
        pipeline.settler.on_node_manifest(run_id, config, node)


def test_a_regressed_config_gets_a_diagnosis_job_of_base_then_head_profiled() -> None:
    pipeline = cloned(Pipeline(draw=plain_report))
    bad_run = regressed(pipeline)
    diagnosis = pipeline.runs.get(f"{bad_run}-d")
    assert diagnosis is not None and diagnosis.spec.diagnosis is not None
    bad = pipeline.runs.get(bad_run)
    assert bad is not None and bad.trigger.before is not None
    assert [c.name for c in diagnosis.spec.configs] == [SLOW]
    assert diagnosis.spec.diagnosis.of_run == bad_run and diagnosis.spec.diagnosis.steps == 5
    assert diagnosis.spec.paired is not None
    assert diagnosis.spec.paired.base_sha == bad.trigger.before
    assert diagnosis.spec.sha == "8" * 40
    (plan,) = [p for p in pipeline.launcher.submitted.values() if p.run_id == diagnosis.run_id]
    assert plan.environment["DISTKPI_PROFILE_STEPS"] == "5"
    assert plan.environment["DISTKPI_BASE_SHA"] == bad.trigger.before
    assert json.loads(plan.environment["DISTKPI_PAIRED"]) == {"max_pairs": 1, "warmup": False}
    # the passing pushes before it started none, and it posted no status of its own
    assert [r for r in pipeline.runs._runs if r.endswith("-d")] == [f"{bad_run}-d"]
    assert pipeline.states()[-1] == ("failure", bad.evaluation.description)  # type: ignore[union-attr]
    assert pipeline.counts.totals.get("DiagnosisRuns") == 1


def test_a_suite_that_never_diagnoses_starts_no_job() -> None:
    pipeline = cloned(Pipeline(draw=plain_report), "diagnose: {on: never}\n")
    bad_run = regressed(pipeline)
    assert pipeline.runs.get(f"{bad_run}-d") is None


def test_an_image_s_own_code_is_not_diagnosed() -> None:
    pipeline = Pipeline(draw=plain_report)  # resnet50 as deployed: source none
    bad_run = regressed(pipeline)
    assert pipeline.runs.get(f"{bad_run}-d") is None


def test_the_traces_are_reduced_into_the_diagnosed_run_and_told() -> None:
    pipeline = cloned(Pipeline(checks=True, draw=plain_report))
    bad_run = regressed(pipeline)
    alerts_before = len(pipeline.topic.messages)
    history_before = len(pipeline.history.records)

    run_diagnosis_job(pipeline, f"{bad_run}-d", SLOW)

    job = pipeline.runs.get(f"{bad_run}-d")
    assert job is not None and job.status is RunStatus.DONE
    stored = json.loads(pipeline.store.objects[diagnosis_key(bad_run, SLOW)])
    assert stored["run_id"] == f"{bad_run}-d" and stored["problems"] == []
    assert stored["base_sha"] == job.spec.paired.base_sha  # type: ignore[union-attr]
    assert stored["head_sha"] == "8" * 40
    trainer = stored["roles"]["trainer"]
    assert trainer["base"]["ranks"] == trainer["head"]["ranks"] == 1
    assert stored["steps"] == 5 and len(stored["top_ops"]) == 10
    assert [t["file"] for t in stored["traces"]["head"]["trainer"]] == [
        f"runs/{bad_run}-d/{SLOW}/pair-1/b/files/trainer-0/profile/rank-0.json.gz"
    ]
    assert stored["gpu_hours"] == 8 * 600 / 3600  # its 8 GPUs for the 600 s its node says
    kpis = json.loads(pipeline.store.objects[kpis_key(bad_run)])
    assert kpis["configs"][SLOW]["diagnosis"] == stored
    assert "diagnosis" not in kpis["configs"]["1x1"]
    # in no history; the report drawn again with it, the check run and the alert say it
    assert len(pipeline.history.records) == history_before
    report = pipeline.store.objects[f"reports/{bad_run}/index.html"].decode()
    assert f"{SLOW} diagnosed: {stored['line']}" in report
    (check,) = [c for c in pipeline.github.checks.values() if c["head_sha"] == "8" * 40]
    assert check["conclusion"] == "failure"
    assert_golden("diagnosis_check_summary.md", check["output"]["summary"])
    assert len(pipeline.topic.messages) == alerts_before + 1
    subject, body = pipeline.topic.messages[-1]
    assert subject == "distkpi: why resnet50 regressed on PaddlePaddle/Paddle develop"
    assert_golden("diagnosis_alert.txt", body)
    assert REPO in body


def test_a_bisection_s_culprit_is_diagnosed_against_its_parent_and_stands() -> None:
    pipeline = cloned(Pipeline(draw=plain_report))
    with_history(pipeline)
    pipeline.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    bad_run = start(pipeline, "d-bad", LINE[-1])
    report_all(pipeline, bad_run, **{BISECTED: 0.7})
    ended = run_steps(pipeline, bad_run, culprit=5)
    assert ended.culprit == LINE[5]

    job = pipeline.runs.get(f"{bad_run}-dc")
    assert job is not None and job.spec.diagnosis is not None and job.spec.paired is not None
    assert (job.spec.sha, job.spec.paired.base_sha) == (LINE[5], LINE[4])
    assert job.spec.diagnosis.culprit and job.spec.diagnosis.of_run == bad_run
    assert [c.name for c in job.spec.configs] == [BISECTED]
    run_diagnosis_job(pipeline, job.run_id, BISECTED, SAMPLED)
    stored = json.loads(pipeline.store.objects[diagnosis_key(bad_run, BISECTED)])
    assert stored["culprit"] and stored["head_sha"] == LINE[5] and stored["base_sha"] == LINE[4]
    # the push's own diagnosis job, ending later, leaves the culprit's standing
    run_diagnosis_job(pipeline, f"{bad_run}-d", BISECTED, SAMPLED)
    assert json.loads(pipeline.store.objects[diagnosis_key(bad_run, BISECTED)]) == stored
    subject, body = pipeline.topic.messages[-1]
    assert subject.startswith("distkpi: why resnet50 regressed")
    assert f"- {BISECTED} throughput -30%: culprit {LINE[5][:10]}: step time +0%: no part " in body


def test_a_pull_requests_diagnosis_job_is_not_one_of_its_runs() -> None:
    """Its runs are its commits' results: an accept, its comment and a new push's supersede
    speak of the diagnosed run, never of the diagnosis job's."""
    from tests.service.test_accept import slowed_pull_request, with_history

    pipeline = cloned(Pipeline(draw=plain_report))
    with_history(pipeline)
    slowed = slowed_pull_request(pipeline)
    assert pipeline.runs.get(f"{slowed.run_id}-d") is not None  # its diagnosis job started
    listed_runs = pipeline.pull_requests.runs("PaddlePaddle/Paddle", 12091)
    assert [p.run_id for p in listed_runs] == [slowed.run_id]
