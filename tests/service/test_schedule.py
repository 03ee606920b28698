"""The stack's schedule measures the head of each listed repository's default branch with the
suites that have a config running on `schedule`, those configs and the base only, once per
head; a repository whose head GitHub cannot tell is named in the error (SQS gives the
schedule again), the others started all the same."""

from __future__ import annotations

import json

import pytest

from distkpi.exceptions import GitHubError
from distkpi.services.schedule import ScheduledRuns
from tests.fakes import SEED_SUITE, plain_report, seed_suite_with_when
from tests.service.pipeline import Pipeline, report_all

REPO = "PaddlePaddle/Paddle"
OTHER = "PaddlePaddle/PaddleNLP"
HEAD = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
NEXT = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"


def seed_with_nightly(configs: dict[str, str]) -> bytes:
    return seed_suite_with_when(configs).encode()


@pytest.fixture
def pipeline() -> Pipeline:
    p = Pipeline()
    p.store.put_bytes(
        f"suites/{SEED_SUITE.name}",
        seed_with_nightly(
            {"1x8": "[pull_request, push]", "2x8-4ps": "[push]", "4x8-8ps": "[schedule]"}
        ),
    )
    p.github.heads = {REPO: ("develop", HEAD), OTHER: ("main", NEXT)}
    return p


def schedule(p: Pipeline) -> ScheduledRuns:
    return ScheduledRuns(p.github, p.catalog, p.starter.delivery, p.counts)


def test_a_schedule_runs_the_base_and_the_configs_that_run_on_schedule(
    pipeline: Pipeline,
) -> None:
    started = schedule(pipeline).start([REPO])
    (run_id,) = started[REPO]
    run = pipeline.runs.get(run_id)
    assert run is not None
    assert (run.trigger.event, run.trigger.sha, run.trigger.branch) == ("schedule", HEAD, "develop")
    assert run.trigger.ref == "refs/heads/develop"
    assert sorted(c.name for c in run.spec.configs) == ["1x1", "4x8-8ps"]
    assert sorted(p.config for p in pipeline.launcher.submitted.values()) == ["1x1", "4x8-8ps"]
    spec = json.loads(pipeline.store.objects[f"runs/{run_id}/run.json"])
    assert (spec["sha"], spec["ref"]) == (HEAD, "refs/heads/develop")


def test_a_second_schedule_of_the_same_head_starts_nothing_and_a_new_head_a_run(
    pipeline: Pipeline,
) -> None:
    runs = schedule(pipeline)
    (first,) = runs.start([REPO])[REPO]
    assert runs.start([REPO]) == {REPO: []}
    assert len(pipeline.launcher.submitted) == 2
    pipeline.github.heads[REPO] = ("develop", NEXT)
    (second,) = runs.start([REPO])[REPO]
    assert second != first and len(pipeline.launcher.submitted) == 4


def test_a_suite_without_a_scheduled_config_is_not_started(pipeline: Pipeline) -> None:
    pipeline.store.put_bytes(f"suites/{SEED_SUITE.name}", SEED_SUITE.read_bytes())
    assert schedule(pipeline).start([REPO]) == {REPO: []}
    assert pipeline.github.asked == []  # not even its head asked for
    assert pipeline.launcher.submitted == {}


def test_a_head_github_cannot_tell_is_reported_and_the_other_repositories_start(
    pipeline: Pipeline,
) -> None:
    del pipeline.github.heads[OTHER]
    runs = schedule(pipeline)
    with pytest.raises(GitHubError, match=f"^schedule: no head for {OTHER} \\(GitHub answered"):
        runs.start([OTHER, REPO])
    assert len(pipeline.launcher.submitted) == 2  # REPO's run
    assert pipeline.counts.totals.get("SchedulesNotResolved") == 1
    # given again (SQS), GitHub back: the started head is not started twice
    pipeline.github.heads[OTHER] = ("main", NEXT)
    started = runs.start([OTHER, REPO])
    assert started[REPO] == [] and len(started[OTHER]) == 1


def test_github_down_starts_nothing_and_says_so(pipeline: Pipeline) -> None:
    pipeline.github.down = True
    with pytest.raises(GitHubError, match="GitHub answered 503"):
        schedule(pipeline).start([REPO])
    assert pipeline.launcher.submitted == {}


def test_a_scheduled_runs_regression_is_the_branchs_alerted_and_bisected() -> None:
    from tests.service.test_bisection import GOOD, LINE, SLOW, listed, with_history

    p = Pipeline(draw=plain_report)
    with_history(p)  # six passing pushes measure every config, the last of them GOOD
    p.store.put_bytes(f"suites/{SEED_SUITE.name}", seed_with_nightly({SLOW: "[push, schedule]"}))
    p.github.heads = {REPO: ("develop", LINE[-1])}
    p.github.commits[(GOOD, LINE[-1])] = listed(LINE)
    (run_id,) = schedule(p).start([REPO])[REPO]
    report_all(p, run_id, **{SLOW: 0.7})
    assert p.states()[-1][0] == "failure"
    ((subject, _),) = p.topic.messages
    assert subject == "distkpi: resnet50 regressed on PaddlePaddle/Paddle develop"
    assert {r.kpi for r in p.regressions.of_branch(REPO, "develop", "resnet50")} == {
        "throughput",
        "speedup",
        "efficiency",
    }
    bisection = p.bisections.get(REPO, "develop", "resnet50", run_id)
    assert bisection is not None and (bisection.good, bisection.bad) == (GOOD, LINE[-1])
    first = p.runs.get(f"{run_id}-b1")
    assert first is not None and [c.name for c in first.spec.configs] == ["1x1", SLOW]
