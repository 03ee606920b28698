"""Regressions with a life: the branch's alert opens one per regressed KPI; a person
acknowledges it; a later run back in range fixes it; a push's accepted run accepts its own."""

from __future__ import annotations

import pytest

from distkpi.domain.github.acceptance import AcceptAsked, Via
from distkpi.domain.regressions import Regression, RegressionState
from tests.service.pipeline import Pipeline, report_all, start

REPO, BRANCH, MODEL = "PaddlePaddle/Paddle", "develop", "resnet50"


def with_history(pipeline: Pipeline, pushes: int = 6) -> None:
    for i in range(pushes):
        report_all(pipeline, start(pipeline, f"d-{i}", f"{i + 1:x}" * 40))


def stored(pipeline: Pipeline) -> list[Regression]:
    return pipeline.regressions.of_branch(REPO, BRANCH, MODEL)


def test_open_then_acknowledged_then_fixed_by_a_later_run_back_in_range() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    pipeline.clock.advance(60)
    slow = start(pipeline, "d-slow", "a" * 40)
    report_all(pipeline, slow, **{"4x8-8ps": 0.7})

    opened = stored(pipeline)
    assert [(r.config, r.kpi, r.state) for r in opened] == [
        ("4x8-8ps", "efficiency", RegressionState.OPEN),
        ("4x8-8ps", "speedup", RegressionState.OPEN),
        ("4x8-8ps", "throughput", RegressionState.OPEN),
    ]
    throughput = opened[2]
    assert throughput.id == f"{slow}:4x8-8ps:throughput"
    assert (throughput.run_id, throughput.sha) == (slow, "a" * 40)
    assert throughput.value is not None and throughput.low is not None
    assert throughput.value < throughput.low  # it left the range it had before, downwards

    pipeline.clock.advance(60)
    acked = pipeline.services.ledger.acknowledge(
        REPO, BRANCH, MODEL, throughput.id, who="alice", note="looking at the allreduce change"
    )
    assert acked.state is RegressionState.ACKNOWLEDGED
    assert [(c.state.value, c.who, c.note) for c in acked.history] == [
        ("open", "distkpi", "alerted"),
        ("acknowledged", "alice", "looking at the allreduce change"),
    ]

    pipeline.clock.advance(60)
    fixed_by = start(pipeline, "d-fix", "b" * 40)
    report_all(pipeline, fixed_by)

    after = {r.kpi: r for r in stored(pipeline)}
    assert {k: r.state for k, r in after.items()} == dict.fromkeys(
        ("efficiency", "speedup", "throughput"), RegressionState.FIXED
    )
    fixed = after["throughput"]
    assert fixed.fixed_by == fixed_by
    assert [c.state.value for c in fixed.history] == ["open", "acknowledged", "fixed"]
    assert fixed.history[-1].at == "2026-11-30T03:03:00+00:00"
    assert fixed.history[-1].note.startswith(f"{fixed_by} at {'b' * 10}: ")


def test_a_run_still_slow_fixes_nothing_and_opens_nothing_twice() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    report_all(pipeline, start(pipeline, "d-slow", "a" * 40), **{"4x8-8ps": 0.7})
    report_all(pipeline, start(pipeline, "d-slow-2", "b" * 40), **{"4x8-8ps": 0.7})
    assert {r.state for r in stored(pipeline)} == {RegressionState.OPEN}
    assert len(stored(pipeline)) == 3  # still alarmed: no second alert, no second regression


def test_only_an_open_regression_can_be_acknowledged() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    report_all(pipeline, start(pipeline, "d-slow", "a" * 40), **{"4x8-8ps": 0.7})
    ledger = pipeline.services.ledger
    first = stored(pipeline)[0]
    ledger.acknowledge(REPO, BRANCH, MODEL, first.id, who="alice", note="mine")
    with pytest.raises(ValueError, match="is acknowledged, not open"):
        ledger.acknowledge(REPO, BRANCH, MODEL, first.id, who="bob", note="mine too")


def test_accepting_a_pushs_run_accepts_its_regressions_and_resets_the_branch() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    slow = start(pipeline, "d-slow", "a" * 40)
    report_all(pipeline, slow, **{"4x8-8ps": 0.7})
    pipeline.github.permissions["alice"] = "admin"

    asked = AcceptAsked(REPO, "alice", "the new kernel is slower", Via.COMMAND, run_id=slow)
    assert pipeline.acceptances.asked(asked, "dispatch-1").accepted == (slow,)

    assert {r.state for r in stored(pipeline)} == {RegressionState.ACCEPTED}
    assert {r.history[-1].note for r in stored(pipeline)} == {"the new kernel is slower"}
    (reset,) = pipeline.history.resets(REPO, BRANCH, MODEL)
    assert (reset.config, reset.who) == ("4x8-8ps", "@alice")


def test_the_history_site_lists_each_regression_with_its_state_as_runs_are_published() -> None:
    import json
    from pathlib import Path

    import jsonschema

    from distkpi.reporting import api

    schema = json.loads(
        (Path(api.__file__).parent / "api_schemas" / "regressions.schema.json").read_text()
    )
    pipeline = Pipeline()
    with_history(pipeline)

    def listed() -> list[tuple[str, str, str]]:
        doc = json.loads(pipeline.store.objects["site/api/regressions.json"])
        jsonschema.validate(doc, schema)
        return [(e["config"], e["kpi"], e["state"]) for e in doc["regressions"]]

    assert listed() == []
    pipeline.clock.advance(60)
    report_all(pipeline, start(pipeline, "d-slow", "a" * 40), **{"4x8-8ps": 0.7})
    # listed by the run that opened them (the site is written after the alert)
    assert sorted(listed()) == [
        ("4x8-8ps", kpi, "open") for kpi in ("efficiency", "speedup", "throughput")
    ]
    pipeline.clock.advance(60)
    report_all(pipeline, start(pipeline, "d-fix", "b" * 40))
    assert sorted(listed()) == [
        ("4x8-8ps", kpi, "fixed") for kpi in ("efficiency", "speedup", "throughput")
    ]
