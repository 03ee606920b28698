"""The services' logic on in-memory ports (tests/fakes.py): a delivery starts a run with a
job per config, nodes fan in to their config and configs to their run, the run is judged
and published once, GitHub down and overdue runs. No moto: what only AWS can show is in
tests/integration."""

from __future__ import annotations

import json
from typing import Any

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.layout import kpis_key, report_key
from distkpi.domain.planning.jobs import JobPlan
from distkpi.domain.records import ConfigState, RunStatus
from distkpi.services.launch import Outcome
from tests.service.pipeline import (
    THROUGHPUT,
    Pipeline,
    jobs_running,
    pushed,
    report_all,
    report_node,
    start,
)


def test_a_push_starts_one_run_with_a_job_per_config_and_says_pending() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    plans = sorted(p.config for p in pipeline.launcher.submitted.values())
    assert plans == ["1x1", "1x8", "2x8-4ps", "4x8-8ps"]
    assert all(c.job_id is not None for c in pipeline.runs.configs(run_id))
    assert pipeline.states() == [("pending", "running 4 config(s), up to 32 GPUs")]
    assert f"runs/{run_id}/run.json" in pipeline.store.objects


def test_a_runs_jobs_are_submitted_before_its_pending_is_posted() -> None:
    pipeline = Pipeline()
    submitted_when_posted: list[int] = []
    post = pipeline.github.post

    def posted(status: Any, *, skippable: bool = False) -> None:
        submitted_when_posted.append(len(pipeline.launcher.submitted))
        post(status, skippable=skippable)

    pipeline.github.post = posted  # type: ignore[method-assign]
    start(pipeline)
    assert submitted_when_posted == [4]


def test_a_spent_write_rate_leaves_pending_out_and_the_result_stands_alone() -> None:
    pipeline = Pipeline()
    pipeline.github.paced = True  # another run's burst spent the installation's turns
    run_id = start(pipeline)
    assert len(pipeline.launcher.submitted) == 4 and pipeline.states() == []
    assert [s["status"].state for s in pipeline.github.skipped] == ["pending"]
    assert pipeline.counts.totals["StatusesLeftOut"] == 1
    assert "StatusPostFailures" not in pipeline.counts.totals
    report_all(pipeline, run_id)  # a result is never skippable: it waits for its turn
    assert [s for s, _ in pipeline.states()] == ["success"]


def test_a_spent_write_rate_leaves_the_queued_check_run_out_and_the_verdict_creates_it() -> None:
    pipeline = Pipeline(checks=True)
    pipeline.github.paced = True
    run_id = start(pipeline)
    assert pipeline.github.checks == {}
    report_all(pipeline, run_id)
    (check,) = pipeline.github.checks.values()
    assert check["status"] == "completed" and check["conclusion"] == "success"


def test_the_same_delivery_twice_starts_nothing_more() -> None:
    pipeline = Pipeline()
    start(pipeline)
    again = pipeline.starter.handle_delivery(pushed(), "d-1")
    assert again.outcome is Outcome.DUPLICATE
    assert len(pipeline.launcher.submitted) == 4
    assert len(pipeline.github.statuses) == 1


def test_nodes_fan_in_and_the_run_is_published_once() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    report_all(pipeline, run_id)
    # a redelivered manifest event settles and publishes nothing twice
    pipeline.settler.on_node_manifest(run_id, "4x8-8ps", 0)
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE and run.published_at is not None
    assert [s for s, _ in pipeline.states()] == ["pending", "success"]
    assert pipeline.counts.totals["ConfigsCompleted"] == 4
    assert {
        r.config for r in pipeline.history.history("PaddlePaddle/Paddle", "develop", "resnet50")
    } == set(THROUGHPUT)
    kpis = json.loads(pipeline.store.objects[kpis_key(run_id)])
    assert {name: c["throughput"] for name, c in kpis["configs"].items()} == THROUGHPUT
    assert report_key(run_id) in pipeline.store.objects


class ReadsCounted:
    """The runs port, counting how often a run item is read."""

    def __init__(self, runs: Any) -> None:
        self.runs, self.reads = runs, 0

    def get(self, run_id: str) -> Any:
        self.reads += 1
        return self.runs.get(run_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runs, name)


def test_the_settler_reads_a_runs_spec_once_not_at_every_nodes_manifest() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    counted = ReadsCounted(pipeline.runs)
    pipeline.settler.runs = counted
    report_all(pipeline, run_id)
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE
    assert sum(c.nodes for c in run.spec.configs) == 20 and counted.reads == 1


def test_a_failed_job_fails_its_config_and_the_run_ends_in_error() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    failed = next(j for j, p in pipeline.launcher.submitted.items() if p.config == "2x8-4ps")
    assert pipeline.settler.on_job_failed(failed, "Essential container in task exited")
    for config in ("1x1", "1x8", "4x8-8ps"):
        run = pipeline.runs.get(run_id)
        assert run is not None
        for node in range(run.spec.config(config).nodes):
            report_node(pipeline, run_id, config, node)
    record = pipeline.runs.config(run_id, "2x8-4ps")
    assert record is not None and record.state is ConfigState.FAILED
    assert record.kpis is not None
    assert record.kpis.problems[0] == "job failed: Essential container in task exited"
    assert pipeline.states()[-1][0] == "error"


def test_a_job_batch_refuses_fails_its_config_and_the_others_still_run() -> None:
    pipeline = Pipeline()
    pipeline.launcher.refuse = {"4x8-8ps"}
    run_id = start(pipeline)
    assert sorted(p.config for p in pipeline.launcher.submitted.values()) == [
        "1x1",
        "1x8",
        "2x8-4ps",
    ]
    record = pipeline.runs.config(run_id, "4x8-8ps")
    assert record is not None and record.state is ConfigState.FAILED
    assert record.kpis is not None
    assert "Batch refused the job of 4x8-8ps" in record.kpis.problems[0]


def test_while_github_is_down_the_run_waits_and_the_sweep_publishes_it_once() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    pipeline.github.down = True
    report_all(pipeline, run_id)
    assert pipeline.runs.unpublished() == [run_id]
    pipeline.github.down = False
    pipeline.clock.advance(600)  # the sweeper, ten minutes on
    assert pipeline.publisher.republish_unpublished() == 1
    assert pipeline.publisher.republish_unpublished() == 0
    assert [s for s, _ in pipeline.states()] == ["pending", "success"]


def test_an_overdue_run_is_settled_as_it_stands_and_its_jobs_stopped() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    jobs_running(pipeline, run_id)
    report_node(pipeline, run_id, "1x1", 0)
    pipeline.clock.advance(3601)
    assert pipeline.deadlines.expire_overdue() == 1
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE
    stopped = {pipeline.launcher.submitted[j].config for j in pipeline.launcher.terminated}
    assert stopped == {"1x8", "2x8-4ps", "4x8-8ps"}
    assert set(pipeline.launcher.terminated.values()) == {
        "timed out: no result 1h after its first job started (0h queued)"
    }
    assert pipeline.states()[-1][0] == State.ERROR.value


def test_a_push_30_percent_slower_than_its_history_fails_naming_the_config() -> None:
    pipeline = Pipeline()
    for i in range(6):
        sha = f"{i + 1:x}" * 40
        report_all(pipeline, start(pipeline, f"d-{i}", sha))
    report_all(pipeline, start(pipeline, "d-slow", "f" * 40), **{"4x8-8ps": 0.7})
    state, description = pipeline.states()[-1]
    assert state == "failure"
    assert description == (
        "32 GPUs 14.0x (-30%), eff 0.44, TTA 240s, acc Δ0.0000: "
        "4x8-8ps tput -30%; 4x8-8ps speedup -30%; 4x8-8ps eff -30%"
    )


class Killed(Exception):
    """The launcher's invocation ended between SubmitJob and keeping the job's id."""


def killed_at_job(pipeline: Pipeline, n: int) -> tuple[str, JobPlan]:
    """A push's delivery whose invocation died once Batch took its n-th job, before the
    job's id was kept: that job and its plan."""
    submit = pipeline.launcher.submit

    def taken_then_killed(plan: JobPlan) -> tuple[str, dict[str, Any]]:
        answer = submit(plan)
        if len(pipeline.launcher.submitted) == n:
            raise Killed
        return answer

    pipeline.launcher.submit = taken_then_killed  # type: ignore[method-assign]
    with pytest.raises(Killed):
        redeliver(pipeline)
    pipeline.launcher.submit = submit  # type: ignore[method-assign]
    found, plan = list(pipeline.launcher.submitted.items())[n - 1]
    assert pipeline.jobs.get(found) is None  # its id was never kept
    return found, plan


def redeliver(pipeline: Pipeline) -> list[str]:
    """The push's delivery started (again, under its claim: the runs resume)."""
    suites, _ = pipeline.catalog.suites()
    return pipeline.starter.delivery.start_runs(pushed(), "d-1", suites)


def test_a_resumed_run_catches_up_with_what_its_found_jobs_did_meanwhile() -> None:
    """Batch took the second job, the invocation died before its id was kept, and the job
    started and failed before the delivery was given again: its events then were nobody's
    (no JOB# item), so the resumed run takes its start and its failure from Batch's
    description of it."""
    pipeline = Pipeline()
    found, plan = killed_at_job(pipeline, 2)
    run_id, lost = plan.run_id, plan.config
    started = "2026-12-02T03:04:05.678+00:00"
    pipeline.launcher.progress[found] = {
        "status": "FAILED",
        "started_at": started,
        "reason": "Essential container in task exited",
    }
    # its events came while it was nobody's
    assert not pipeline.services.job_starts.on_job_running(found, started)
    assert redeliver(pipeline) == [run_id]
    assert len(pipeline.launcher.submitted) == 4  # the found job is not submitted again
    configs = {c.name: c for c in pipeline.runs.configs(run_id)}
    assert configs[lost].job_id == found
    assert configs[lost].state is ConfigState.FAILED
    assert configs[lost].kpis is not None
    assert "job failed: Essential container in task exited" in configs[lost].kpis.problems
    resumed = pipeline.runs.get(run_id)
    assert resumed is not None and resumed.started_at == started
    assert pipeline.counts.totals["JobsFoundSubmitted"] == 1


def test_a_resumed_run_that_ends_while_it_is_submitted_posts_no_pending_over_its_result() -> None:
    """The dead invocation submitted every job and kept all ids but the last; the three
    ran and reported, and the last failed before the delivery came again: catching up with
    it ends the run, whose result is then the commit's last status, not `pending`."""
    pipeline = Pipeline()
    found, plan = killed_at_job(pipeline, 4)
    run_id = plan.run_id
    for config in pipeline.runs.configs(run_id):
        if config.name != plan.config:
            for node in range(config.nodes_expected):
                report_node(pipeline, run_id, config.name, node)
    pipeline.launcher.progress[found] = {"status": "FAILED", "reason": "Host EC2 terminated"}
    assert redeliver(pipeline) == [run_id]
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE
    assert [state for state, _ in pipeline.states()] == ["error"]
