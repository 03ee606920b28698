"""A run's purpose is read from the run once (domain/purpose.py) and every service treats it
by its row of the policy table: a delivery's run, its confirmation, a bisection's step."""

from __future__ import annotations

from dataclasses import replace

from distkpi.domain.purpose import POLICIES, Purpose, policy_of, purpose_of
from tests.service.pipeline import Pipeline, start


def test_every_purpose_has_a_policy_and_a_run_is_known_by_its_record() -> None:
    assert set(POLICIES) == set(Purpose)
    pipeline = Pipeline()
    run = pipeline.runs.get(start(pipeline))
    assert run is not None
    assert purpose_of(run) is Purpose.COMMIT
    assert purpose_of(replace(run, attempt=2)) is Purpose.CONFIRMATION
    step = replace(run, bisection="resnet50-9f4e1c2b7a-00000000")
    assert purpose_of(step) is Purpose.BISECTION_STEP
    # a step is in no history and tells GitHub nothing; it never confirms or bisects again
    policy = policy_of(step)
    assert not (policy.published or policy.confirms)
    assert not policy.bisects and policy.judges_looks
