"""Batch takes 50 SubmitJob a second for the whole account and answers more with
TooManyRequestsException: each container submits at its own pace (a token bucket), and a
throttled call waits a jittered backoff and is tried again; past its retries the work is
given back whole (SubmitThrottledError), never a config failed for it."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from distkpi.adapters.batch import THROTTLED, BatchLauncher
from distkpi.adapters.pacing import TokenBucket
from distkpi.domain.planning.jobs import JobPlan, NodeGroup
from distkpi.exceptions import LaunchError, SubmitThrottledError

# Batch's answer as boto3 raises it (the error shape of the Batch API reference)
THROTTLE_ERROR = {
    "Error": {"Code": THROTTLED, "Message": "Too Many Requests"},
    "ResponseMetadata": {"HTTPStatusCode": 429},
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class ThrottlingBatch:
    """Batch's client for SubmitJob: throttles the first ``throttled`` calls, then accepts."""

    def __init__(self, throttled: int, code: str = THROTTLED) -> None:
        self.throttled, self.code = throttled, code
        self.calls: list[dict[str, Any]] = []

    def submit_job(self, **request: Any) -> dict[str, str]:
        self.calls.append(request)
        if len(self.calls) <= self.throttled:
            error = {**THROTTLE_ERROR, "Error": {"Code": self.code, "Message": "refused"}}
            raise ClientError(error, "SubmitJob")  # type: ignore[arg-type]
        return {"jobId": f"job-{len(self.calls)}", "jobName": request["jobName"]}


PLAN = JobPlan(
    name="distkpi-run-1x1",
    run_id="run",
    config="1x1",
    nodes=1,
    environment={"DISTKPI_RUN_ID": "run"},
    groups=(NodeGroup(0, 0, "trainer"),),
    share="PaddlePaddle_Paddle",
)


def launcher(batch: ThrottlingBatch, clock: FakeClock, **kwargs: Any) -> BatchLauncher:
    return BatchLauncher("queue", "single", "multi", batch, sleep=clock.sleep, **kwargs)  # type: ignore[arg-type]


def test_a_throttled_submit_backs_off_and_then_succeeds() -> None:
    clock, batch = FakeClock(), ThrottlingBatch(throttled=2)
    job_id, _ = launcher(batch, clock, throttle_backoff_s=0.5).submit(PLAN)
    assert job_id == "job-3"
    assert len(batch.calls) == 3
    # full jitter: each wait at most base * 2^attempt
    assert len(clock.slept) == 2
    assert 0 <= clock.slept[0] <= 0.5 and 0 <= clock.slept[1] <= 1.0


def test_throttled_past_its_retries_gives_the_work_back_rather_than_failing_the_config() -> None:
    clock, batch = FakeClock(), ThrottlingBatch(throttled=10)
    with pytest.raises(SubmitThrottledError, match="throttled job distkpi-run-1x1 3 times"):
        launcher(batch, clock, throttle_retries=2).submit(PLAN)
    assert not isinstance(SubmitThrottledError("x"), LaunchError)
    assert len(batch.calls) == 3


def test_another_refusal_is_no_throttle_and_not_tried_again() -> None:
    clock, batch = FakeClock(), ThrottlingBatch(throttled=1, code="ClientException")
    with pytest.raises(LaunchError, match="Batch refused job distkpi-run-1x1"):
        launcher(batch, clock).submit(PLAN)
    assert len(batch.calls) == 1 and clock.slept == []


def test_the_bucket_spreads_calls_at_its_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=1.0, clock=clock, sleep=clock.sleep)
    for _ in range(21):
        bucket.take()
    # one at once, then one every 0.1 s: 21 calls take 2 s, never faster than 10 a second
    assert clock.now == pytest.approx(2.0)


def test_a_paced_launcher_submits_no_faster_than_its_rate() -> None:
    clock, batch = FakeClock(), ThrottlingBatch(throttled=0)
    paced = launcher(batch, clock, pace=TokenBucket(5.0, clock=clock, sleep=clock.sleep))
    for _ in range(11):
        paced.submit(PLAN)
    assert clock.now == pytest.approx(2.0) and paced.submitted == 11


def test_a_fair_share_queue_gets_the_repositorys_share_identifier() -> None:
    clock, batch = FakeClock(), ThrottlingBatch(throttled=0)
    launcher(batch, clock, fair_share=True).submit(PLAN)
    launcher(batch, clock).submit(PLAN)
    assert batch.calls[0]["shareIdentifier"] == "PaddlePaddle_Paddle"
    assert "shareIdentifier" not in batch.calls[1]
