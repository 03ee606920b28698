"""A calibration delivery through the services, on in-memory ports: it starts N A/A paired
runs of the suite at the commit (a redelivery none), each runs every pair whatever its looks
see, and their first pairs' differences join the branch's paired history, each run its own
value though all are of one commit; `distkpi calibrate` reads them back as A/A jobs."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

from distkpi.domain.commit_status import State
from distkpi.domain.github.webhook import CALIBRATION_EVENT, Calibrate, Rerun, decide, parse
from distkpi.domain.history_rows import rows_from_records
from distkpi.domain.judging.history import series
from distkpi.domain.layout import config_prefix, decision_key
from distkpi.domain.signing import sign, signed_by
from distkpi.services.baseline import baseline_of
from distkpi.services.launch import Outcome
from distkpi.services.looks import PairedLooks
from distkpi_cli.calibration import aa_jobs_of, calibrate
from tests.fakes import ROOT
from tests.service.pipeline import THROUGHPUT, Pipeline, start
from tests.service.test_paired_looks import files_of, manifest

SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
RECORDED = json.loads((ROOT / "tests" / "events" / "repository_dispatch.json").read_text())


def asked(model: str = "resnet50", jobs: int = 3, repo: str | None = None) -> Calibrate:
    payload = copy.deepcopy(RECORDED["payload"])
    payload["repository"]["full_name"] = repo or payload["repository"]["full_name"]
    payload["action"] = "distkpi-calibrate"
    payload["client_payload"] = {"sha": SHA, "model": model, "jobs": jobs, "branch": "develop"}
    decided = decide(parse(CALIBRATION_EVENT, payload), ["develop"])
    assert isinstance(decided, Calibrate)
    return decided


def cloned_suite(pipeline: Pipeline) -> None:
    """The stack's resnet50 suite with its code cloned (a paired job needs two checkouts)."""
    text = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    pipeline.store.put_bytes("suites/resnet50.yaml", text.replace("source: none\n", "").encode())


def test_a_calibration_starts_its_a_a_runs_once_with_a_status_no_merge_waits_for() -> None:
    pipeline = Pipeline()
    cloned_suite(pipeline)
    started = pipeline.starter.calibrate(asked(), "cal-1")
    assert started.outcome is Outcome.STARTED and started.refused is None
    assert len(started.runs) == len(set(started.runs)) == 3
    for run_id in started.runs:
        run = pipeline.runs.get(run_id)
        assert run is not None and run.spec.paired is not None
        assert run.spec.paired.base_sha == run.spec.sha == SHA
        assert run.spec.paired.calibration
        assert (run.spec.paired.max_pairs, run.spec.paired.warmup) == (2, True)
        assert run.verdict_settings.confirm is None
        assert run.history_branch == "develop" and run.trigger.event == CALIBRATION_EVENT
    submitted = len(pipeline.launcher.submitted)
    assert submitted == 3 * len(THROUGHPUT)
    assert {(s.context, s.state) for s in pipeline.github.statuses} == {
        ("distkpi/resnet50/calibration", "pending")
    }
    # GitHub delivers again (a timeout, a redelivery by hand): nothing starts twice
    again = pipeline.starter.calibrate(asked(), "cal-1")
    assert again.outcome is Outcome.DUPLICATE and again.runs == []
    assert len(pipeline.launcher.submitted) == submitted


def test_a_suite_that_cannot_be_paired_or_is_not_there_is_refused_and_claims_nothing() -> None:
    pipeline = Pipeline()  # resnet50 as the stack has it: source none
    refused = pipeline.starter.calibrate(asked(), "cal-1")
    assert refused.runs == []
    assert refused.refused == (
        "suite resnet50 cannot be calibrated: source: none runs the image's own code; a "
        "paired job checks out two commits"
    )
    unknown = pipeline.starter.calibrate(asked(model="vgg16"), "cal-2")
    assert unknown.refused == "no suite 'vgg16' runs for octo-org/octo-repo"
    assert pipeline.launcher.submitted == {} and pipeline.github.statuses == []
    # the suite fixed, GitHub's redelivery of the same delivery starts the runs
    cloned_suite(pipeline)
    assert len(pipeline.starter.calibrate(asked(), "cal-1").runs) == 3


def run_every_pair(pipeline: Pipeline, looks: PairedLooks, run_id: str, job: int) -> list[Any]:
    """Every config's job, both pairs (arm B of job k k% faster: an A/A job's runs differ
    only by noise), then its final manifests; the decisions the nodes read."""
    decisions = []
    for config in THROUGHPUT:
        key = pipeline.keys.for_config(run_id, config)
        nodes = pipeline.runs.get(run_id).spec.config(config).nodes  # type: ignore[union-attr]
        sent: dict[int, list[Any]] = {n: [] for n in range(nodes)}
        for pair in (1, 2):
            for node in range(nodes):
                files = files_of(pipeline, run_id, config, node, pair, b=1 + job / 100)
                sent[node] += files
                look = manifest(run_id, config, node, files, pair=pair)
                at = f"{config_prefix(run_id, config)}pair-{pair}/node-{node}.json"
                pipeline.store.put_bytes(at, json.dumps(sign(key, look)).encode())
                looks.on_look_manifest(run_id, config, pair, node)
        written = json.loads(pipeline.store.objects[decision_key(run_id, config, 1)])
        assert signed_by(key, written)
        decisions.append(written)
        for node in range(nodes):
            final = sign(key, manifest(run_id, config, node, sent[node]))
            at = f"{config_prefix(run_id, config)}node-{node}.json"
            pipeline.store.put_bytes(at, json.dumps(final).encode())
            pipeline.settler.on_node_manifest(run_id, config, node)
    return decisions


def test_a_a_runs_run_every_pair_and_seed_the_paired_history_each_on_its_own() -> None:
    pipeline = Pipeline()
    cloned_suite(pipeline)
    looks = pipeline.looks
    runs = pipeline.starter.calibrate(asked(), "cal-1").runs
    for job, run_id in enumerate(runs, 1):
        decisions = run_every_pair(pipeline, looks, run_id, job)
        # an unchanged commit's first look would stop it; an A/A job goes on to its last pair
        assert {d["decision"] for d in decisions} == {"continue"}
        assert all("calibration" in d["why"] for d in decisions)
        run = pipeline.runs.get(run_id)
        assert run is not None and run.evaluation is not None
        assert all(len(c.pairs) == 2 for c in run.evaluation.kpis.configs)
    finals = [s for s in pipeline.github.statuses if s.state != State.PENDING.value]
    assert len(finals) == 3 and {s.context for s in finals} == {"distkpi/resnet50/calibration"}
    records = list(pipeline.history.history("octo-org/octo-repo", "develop", "resnet50"))
    assert len(records) == 3 * len(THROUGHPUT) and all(r.calibration for r in records)
    # one commit, three values: each A/A run counts in the paired history
    rows = rows_from_records(records)
    seeded = series(rows, "1x1", "throughput", hardware=None, paired=True)
    assert sorted(seeded) == sorted(r.paired["throughput"] for r in records if r.config == "1x1")
    assert len(seeded) == 3
    # `distkpi calibrate` reads them back as three jobs of four runs each
    aa = aa_jobs_of(records)
    assert aa.runs == tuple(sorted(runs))
    assert [len(runs) for runs in aa.jobs["1x8"]["throughput"]] == [4, 4, 4]
    calibrated = calibrate(aa.jobs, records_settings(pipeline, runs[0]))
    assert calibrated.components["1x8"]["throughput"].jobs == 3


def records_settings(pipeline: Pipeline, run_id: str) -> Any:
    run = pipeline.runs.get(run_id)
    assert run is not None
    return run.verdict_settings


def test_a_later_push_of_the_branch_is_judged_against_the_seeded_paired_history() -> None:
    pipeline = Pipeline()
    cloned_suite(pipeline)
    looks = pipeline.looks
    pushes_to = json.loads((ROOT / "tests" / "events" / "push.json").read_text())["payload"]
    calibration = asked(repo=pushes_to["repository"]["full_name"])
    for job, run_id in enumerate(pipeline.starter.calibrate(calibration, "cal-1").runs, 1):
        run_every_pair(pipeline, looks, run_id, job)
    pipeline.clock.advance(3600)
    pushed = pipeline.runs.get(start(pipeline, "push-1", sha="a" * 40))
    assert pushed is not None
    rows = baseline_of(pipeline.history, pushed).rows
    assert len(series(rows, "1x1", "throughput", hardware=None, paired=True)) == 3


def test_a_re_run_of_the_commits_checks_neither_repeats_nor_waits_for_its_a_a_runs() -> None:
    pipeline = Pipeline()
    cloned_suite(pipeline)
    calibration = asked()
    assert len(pipeline.starter.calibrate(calibration, "cal-1").runs) == 3  # still running
    # "Re-run all checks" of the commit: no delivery admitted for it ran resnet50's check
    rerun = Rerun(replace(calibration.trigger, event="push"), suites=None)
    repeated = pipeline.starter.rerun(rerun, "rerun-1")
    assert repeated.runs == [] and repeated.refused_for == []
    assert repeated.never_admitted == ["resnet50"]
    assert len(pipeline.launcher.submitted) == 3 * len(THROUGHPUT)
