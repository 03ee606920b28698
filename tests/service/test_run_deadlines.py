"""A run's deadline starts when its jobs start: its time in Batch's queue is bounded apart
(QueueWaitSeconds), the run timeout (RunTimeoutSeconds) counts from its first job's RUNNING,
and what it waited is kept and said when it times out. The sweeper hands overdue runs to a
queue; each is settled by the deadlines function, once."""

from __future__ import annotations

from distkpi.domain.records import RunStatus
from tests.fakes import FakeQueue
from tests.service.pipeline import Pipeline, report_node, start


def bounded() -> Pipeline:
    return Pipeline(run_timeout_s=3600, queue_wait_s=7200)


def started_at(pipeline: Pipeline, run_id: str) -> str:
    """Batch's RUNNING for the run's first job, at the pipeline's time now."""
    (first, *_) = pipeline.runs.configs(run_id)
    assert first.job_id is not None
    at = pipeline.clock().isoformat(timespec="milliseconds")
    assert pipeline.services.job_starts.on_job_running(first.job_id, at)
    return at


def test_a_run_still_queued_is_not_timed_out_by_the_run_timeout() -> None:
    pipeline = bounded()
    run_id = start(pipeline)
    pipeline.clock.advance(3601)  # past the run timeout, inside the queue wait
    assert pipeline.deadlines.overdue() == []
    pipeline.clock.advance(3600)  # past the queue wait
    assert pipeline.deadlines.overdue() == [run_id]
    assert pipeline.deadlines.expire(run_id)
    stopped = set(pipeline.launcher.terminated.values())
    assert stopped == {"timed out: no job started 2h after the run was queued"}


def test_the_run_timeout_counts_from_the_first_jobs_start() -> None:
    pipeline = bounded()
    run_id = start(pipeline)
    pipeline.clock.advance(5400)  # 1.5 h in Batch's queue
    at = started_at(pipeline, run_id)
    run = pipeline.runs.get(run_id)
    assert run is not None and run.started_at == at and run.queue_wait_s_taken == 5400
    pipeline.clock.advance(3599)  # 2.5 h after the run was made, 1 h less 1 s after it started
    assert pipeline.deadlines.overdue() == []
    pipeline.clock.advance(2)
    assert pipeline.deadlines.overdue() == [run_id]
    report_node(pipeline, run_id, "1x1", 0)
    assert pipeline.deadlines.expire(run_id)
    assert set(pipeline.launcher.terminated.values()) == {
        "timed out: no result 1h after its first job started (90min queued)"
    }


def test_a_later_jobs_start_moves_nothing() -> None:
    pipeline = bounded()
    run_id = start(pipeline)
    first = started_at(pipeline, run_id)
    pipeline.clock.advance(600)
    later = pipeline.runs.configs(run_id)[1]
    assert later.job_id is not None
    assert not pipeline.services.job_starts.on_job_running(later.job_id, "2026-11-30T04:00Z")
    run = pipeline.runs.get(run_id)
    assert run is not None and run.started_at == first


def test_the_sweeper_hands_overdue_runs_over_and_each_is_settled_once() -> None:
    pipeline = bounded()
    overdue, on_time = start(pipeline, "d-1", "a" * 40), start(pipeline, "d-2", "b" * 40)
    pipeline.clock.advance(7000)
    started_at(pipeline, on_time)  # its run timeout counts from here
    pipeline.clock.advance(201)  # the other, never started, is past its queue wait
    queue = FakeQueue()
    assert pipeline.deadlines.hand_over(queue) == 1
    assert queue.sent == [{"run_id": overdue}]
    # nothing is settled in the sweep's own invocation
    run = pipeline.runs.get(overdue)
    assert run is not None and run.status is RunStatus.RUNNING
    assert pipeline.deadlines.expire(overdue)
    # a second message of it (the next sweep came first) settles nothing again
    assert not pipeline.deadlines.expire(overdue)
    run = pipeline.runs.get(overdue)
    assert run is not None and run.status is RunStatus.DONE
    assert not pipeline.deadlines.expire(on_time)
