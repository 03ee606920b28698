"""Which part explains a step-time change, and when none does."""

from __future__ import annotations

import pytest

from distkpi.domain.diagnosis.breakdown import RankBreakdown
from distkpi.domain.diagnosis.compare import diagnose, summary


def rank(compute: float, comm: float, data: float = 0.001, idle: float = 0.001) -> RankBreakdown:
    step = compute + comm + data + idle
    return RankBreakdown(rank=0, steps=5, device="cpu", step_s=step, compute_s=compute,
                         communication_s=comm, exposed_communication_s=comm, other_s=0.0,
                         data_s=data, idle_s=idle)  # fmt: skip


@pytest.mark.parametrize(
    ("head", "part"),
    [
        (rank(0.010, 0.008), "communication"),  # +4 ms of a 16 ms step, all in communication
        (rank(0.014, 0.004), "compute"),
        (rank(0.006, 0.004), "compute"),  # faster: the change is explained the same way
        (rank(0.0101, 0.004), None),  # +0.6%: noise
        (rank(0.013, 0.001), None),  # +3 compute -3 communication: the step did not move
    ],
)
def test_the_part_that_moved_most_the_steps_way_explains_it(
    head: RankBreakdown, part: str | None
) -> None:
    base = rank(0.010, 0.004)
    assert diagnose({"trainer": [base]}, {"trainer": [head]}).largest_change == part


def test_a_part_that_moved_less_than_half_the_step_explains_nothing() -> None:
    base = rank(0.010, 0.004, data=0.001, idle=0.001)
    head = rank(0.011, 0.005, data=0.002, idle=0.002)  # four parts, +1 ms each
    d = diagnose({"trainer": [base]}, {"trainer": [head]})
    assert d.largest_change is None
    assert summary(d) == (
        "step time +25% (16 -> 20 ms per step): no part explains it "
        "(noise, or outside the profiled steps)"
    )


def test_the_role_whose_step_changed_most_decides() -> None:
    trainer = rank(0.010, 0.004)
    d = diagnose(
        {"trainer": [trainer], "pserver": [rank(0.002, 0.010)]},
        {"trainer": [trainer], "pserver": [rank(0.002, 0.020)]},
    )
    assert d.largest_change == "communication"
    assert summary(d).startswith("pserver step time +71% (14 -> 24 ms per step): communication")
