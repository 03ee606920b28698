"""A paired suite's launch on in-memory ports: run.json's `paired` and every job's
DISTKPI_BASE_SHA and DISTKPI_PAIRED, with the base GitHub gives (a pull request's merge base
from the one compare it already asks, a push's first parent), the time its runs may take,
a re-run paired with the same base, and a run with no base ending `error` at once."""

from __future__ import annotations

import json

import pytest

from distkpi.domain.github.webhook import Rerun, Trigger, decide, parse
from distkpi.domain.layout import run_spec_key
from distkpi.domain.planning.suites import BrokenSuite, Suite
from distkpi.domain.records import ConfigState, RunStatus
from distkpi.services.launch import Outcome
from tests.fakes import ROOT
from tests.service.pipeline import Pipeline, jobs_running, pushed

HEAD = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
PARENT = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
MERGE_BASE = "4303c5b90e2216d927155e9609436ccb8984c495"
PAIRED_ENV = {"max_pairs": 4, "warmup": True}


def paired_pipeline(*, paths: bool = False) -> Pipeline:
    """The pipeline with the local paired suite deployed in place of resnet50."""
    pipeline = Pipeline()
    del pipeline.store.objects["suites/resnet50.yaml"]
    text = (ROOT / "infra" / "suites" / "local-paired.yaml").read_text()
    if paths:
        text += "paths: ['infra/job/**']\n"
    pipeline.store.put_bytes("suites/local-paired.yaml", text.encode())
    return pipeline


def pull_request() -> Trigger:
    recorded = json.loads((ROOT / "tests" / "events" / "pull_request.json").read_text())
    trigger = decide(parse("pull_request", recorded["payload"]), ["develop"])
    assert isinstance(trigger, Trigger)
    return trigger


def started(pipeline: Pipeline, trigger: Trigger, delivery: str = "d-1") -> str:
    delivered = pipeline.starter.handle_delivery(trigger, delivery)
    assert delivered.outcome is Outcome.STARTED
    (run_id,) = delivered.runs
    return run_id


def run_json(pipeline: Pipeline, run_id: str) -> dict[str, object]:
    return json.loads(pipeline.store.objects[run_spec_key(run_id)])  # type: ignore[no-any-return]


def assert_every_job_pairs_with(pipeline: Pipeline, run_id: str, base: str) -> None:
    plans = [p for p in pipeline.launcher.submitted.values() if p.run_id == run_id]
    assert sorted(p.config for p in plans) == ["1x1", "1x1-1ps", "1x2"]
    for plan in plans:
        assert plan.environment["DISTKPI_BASE_SHA"] == base
        assert json.loads(plan.environment["DISTKPI_PAIRED"]) == PAIRED_ENV
        assert plan.timeout_s == 9 * 7200 + 7200


def test_a_push_pairs_with_its_first_parent() -> None:
    pipeline = paired_pipeline()
    pipeline.github.parents[HEAD] = (PARENT, "f" * 40)
    run_id = started(pipeline, pushed(HEAD))
    assert run_json(pipeline, run_id)["paired"] == {
        "base_sha": PARENT,
        "max_pairs": 4,
        "warmup": True,
    }
    assert_every_job_pairs_with(pipeline, run_id, PARENT)
    assert pipeline.github.asked == [f"commit {HEAD}"]
    run = pipeline.runs.get(run_id)
    assert run is not None and run.extra_time_s == 8 * 7200
    assert pipeline.states() == [("pending", "running 3 config(s), up to 2 GPUs")]


def test_a_pull_request_pairs_with_its_merge_base_from_the_one_compare() -> None:
    pipeline = paired_pipeline(paths=True)
    trigger = pull_request()
    assert trigger.base_sha is not None
    pipeline.github.merge_bases[(trigger.base_sha, trigger.sha)] = MERGE_BASE
    pipeline.github.changed = ["infra/job/reference.py"]
    run_id = started(pipeline, trigger)
    paired = run_json(pipeline, run_id)["paired"]
    assert paired == {"base_sha": MERGE_BASE, "max_pairs": 4, "warmup": True}
    assert trigger.base_sha != MERGE_BASE  # the merge base, not the base branch's tip
    assert_every_job_pairs_with(pipeline, run_id, MERGE_BASE)
    # the suite's paths and its base came from the same compare request
    assert pipeline.github.asked == [f"compare {trigger.base_sha}...{trigger.sha}"]


def test_an_unpaired_suite_asks_github_nothing_more() -> None:
    pipeline = Pipeline()
    run_id = started(pipeline, pushed(HEAD))
    assert pipeline.github.asked == []
    assert run_json(pipeline, run_id)["paired"] is None
    assert all(
        "DISTKPI_BASE_SHA" not in p.environment for p in pipeline.launcher.submitted.values()
    )


def test_a_root_commit_pushed_is_an_error_at_once_with_no_job() -> None:
    pipeline = paired_pipeline()
    pipeline.github.parents[HEAD] = ()
    run_id = started(pipeline, pushed(HEAD))
    assert pipeline.launcher.submitted == {}
    assert pipeline.states() == [  # ended at once: no `pending` before its result
        (
            "error",
            "all 3 configs failed: not submitted: no base to pair with: 9f4e1c2b7a is a root "
            "commit (no parent)",
        ),
    ]
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE
    assert run_json(pipeline, run_id)["paired"] is None
    assert {c.state for c in pipeline.runs.configs(run_id)} == {ConfigState.FAILED}


def test_a_parent_github_does_not_know_is_an_error_naming_the_answer() -> None:
    pipeline = paired_pipeline()  # no parents known: GitHub answers 404
    started(pipeline, pushed(HEAD))
    assert pipeline.launcher.submitted == {}
    state, description = pipeline.states()[-1]
    assert state == "error"
    assert description.startswith(
        "all 3 configs failed: not submitted: no base to pair with: the parent of 9f4e1c2b7a: "
        "GitHub answered 404"
    )
    assert pipeline.counts.totals["CommitLookupFailures"] == 1


def test_a_compare_without_a_merge_base_is_an_error_naming_it() -> None:
    pipeline = paired_pipeline()
    trigger = pull_request()
    started(pipeline, trigger)  # the compare answers no merge base
    assert pipeline.launcher.submitted == {}
    assert pipeline.states()[-1] == (
        "error",
        "all 3 configs failed: not submitted: no base to pair with: GitHub's compare "
        "1a2b3c4d5e...9f4e1c2b7a: its answer names no merge_base_commit",
    )


def test_while_github_is_down_no_job_runs_and_the_error_goes_out_when_it_is_back() -> None:
    pipeline = paired_pipeline()
    pipeline.github.down = True
    run_id = started(pipeline, pushed(HEAD))
    assert pipeline.launcher.submitted == {}
    assert pipeline.runs.unpublished() == [run_id]
    pipeline.github.down = False
    assert pipeline.publisher.republish_unpublished() == 1
    state, description = pipeline.states()[-1]
    assert (state, description) == (
        "error",
        "all 3 configs failed: not submitted: no base to pair with: the parent of 9f4e1c2b7a: "
        "GitHub answered 503",
    )


def test_a_rerun_of_a_paired_run_pairs_with_the_same_base_without_asking_again() -> None:
    pipeline = paired_pipeline()
    pipeline.github.parents[HEAD] = (PARENT,)
    first = started(pipeline, pushed(HEAD))
    assert pipeline.runs.cancel(first, "stopped by a person", "2026-11-30T03:30:00Z")
    pipeline.github.parents.clear()  # GitHub would no longer say: the run's base is kept
    rerun = Rerun(pushed(HEAD), ("local-paired",), previous=first)
    (again,) = pipeline.starter.rerun(rerun, "d-rerun").runs
    assert again != first
    assert run_json(pipeline, again)["paired"] == run_json(pipeline, first)["paired"]
    assert_every_job_pairs_with(pipeline, again, PARENT)
    assert pipeline.github.asked == [f"commit {HEAD}"]


def test_a_paired_run_has_until_all_its_runs_could_have_ended() -> None:
    pipeline = paired_pipeline()  # the sweeper's run timeout: 1 h
    pipeline.github.parents[HEAD] = (PARENT,)
    run_id = started(pipeline, pushed(HEAD))
    jobs_running(pipeline, run_id)
    pipeline.clock.advance(3600 + 8 * 7200 - 1)
    assert pipeline.deadlines.expire_overdue() == 0
    pipeline.clock.advance(2)
    assert pipeline.deadlines.expire_overdue() == 1
    assert set(pipeline.launcher.terminated.values()) == {
        "timed out: no result 17h after its first job started (0h queued)"
    }
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE


def test_a_rerun_reads_the_suite_catalog_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = paired_pipeline()
    pipeline.github.parents[HEAD] = (PARENT,)
    first = started(pipeline, pushed(HEAD))
    assert pipeline.runs.cancel(first, "stopped by a person", "2026-11-30T03:30:00Z")
    reads: list[int] = []
    read = pipeline.store.suites

    def counted() -> tuple[list[Suite], list[BrokenSuite]]:
        reads.append(1)
        return read()

    monkeypatch.setattr(pipeline.store, "suites", counted)
    rerun = Rerun(pushed(HEAD), ("local-paired",), previous=first)
    assert len(pipeline.starter.rerun(rerun, "d-rerun").runs) == 1
    assert len(reads) == 1
