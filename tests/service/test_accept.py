"""Accepting an intended regression, from GitHub's real deliveries (tests/events/): a writer's
`/distkpi accept` turns the failed check `success` and is kept; a reader is told who may;
a new push is judged afresh; the merge starts the accepted configs' new baseline level;
a suite's `verdict.acceptable` refuses the KPIs it leaves out; the pull request's comment
says it was accepted as the check run does, unless the suite's is `never`, and GitHub down
while editing it loses no acceptance."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from distkpi.domain.github.acceptance import AcceptAsked, Merged, Via
from distkpi.domain.github.webhook import Trigger, decide, parse
from distkpi.domain.layout import diagnosis_key
from distkpi.domain.records import RunRecord
from distkpi.exceptions import GitHubError
from distkpi.services.launch import Outcome
from tests.fakes import ROOT, FakeRunSource
from tests.service.pipeline import Pipeline, report_all, start

HEAD = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"  # the pull request's head in tests/events
REASON = "trades 8% throughput for 30% less GPU memory"
COMMENTER = "Codertocat"  # who wrote the recorded comment
# a status names who accepted as "@login" with a zero-width space after the @: read, not pinged
AT = "@\u200b"


def replies(pipeline: Pipeline) -> list[tuple[str, int, str]]:
    """The comments posted in reply to people: (repo, number, body); each suite's own
    pull-request comment (its hidden marker first) left out."""
    return [
        (c["repo"], c["number"], c["body"])
        for c in pipeline.github.comments.values()
        if not c["body"].startswith("<!-- distkpi:suite=")
    ]


def payload(name: str) -> dict[str, Any]:
    recorded = json.loads((ROOT / "tests" / "events" / f"{name}.json").read_text())
    return copy.deepcopy(recorded["payload"])  # type: ignore[no-any-return]


def pull_request(sha: str = HEAD) -> Trigger:
    p = payload("pull_request")
    p["pull_request"]["head"]["sha"] = sha
    trigger = decide(parse("pull_request", p), ["develop"])
    assert isinstance(trigger, Trigger)
    return trigger


def comment() -> AcceptAsked:
    asked = decide(parse("issue_comment", payload("issue_comment")), ["develop"])
    assert isinstance(asked, AcceptAsked)
    return asked


def with_history(pipeline: Pipeline, pushes: int = 6) -> None:
    for i in range(pushes):
        report_all(pipeline, start(pipeline, f"d-{i}", f"{i + 1:x}" * 40))


def slowed_pull_request(pipeline: Pipeline, sha: str = HEAD, delivery: str = "pr-1") -> RunRecord:
    started = pipeline.starter.handle_delivery(pull_request(sha), delivery)
    assert started.outcome is Outcome.STARTED
    (run_id,) = started.runs
    report_all(pipeline, run_id, **{"4x8-8ps": 0.7})
    run = pipeline.runs.get(run_id)
    assert run is not None and run.evaluation is not None
    assert run.evaluation.verdict.state.value == "failure"
    return run


def test_the_recorded_comment_asks_to_accept_with_its_reason() -> None:
    assert comment() == AcceptAsked(
        "PaddlePaddle/Paddle", COMMENTER, REASON, Via.COMMENT, pull_request=12091
    )


def test_a_writer_accepts_the_status_turns_success_and_who_when_why_are_kept() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "write"

    answer = pipeline.acceptances.asked(comment(), "c-1")

    assert answer.accepted == (run.run_id,) and answer.refused is None
    assert pipeline.states()[-1] == ("success", f"accepted by {AT}{COMMENTER}: {REASON}")
    accepted = pipeline.runs.get(run.run_id).accepted  # type: ignore[union-attr]
    assert accepted is not None
    assert (accepted.login, accepted.reason, accepted.at) == (
        COMMENTER,
        REASON,
        "2026-11-30T03:00:00+00:00",
    )
    assert accepted.kpis == (
        ("4x8-8ps", "throughput"),
        ("4x8-8ps", "speedup"),
        ("4x8-8ps", "efficiency"),
    )
    records = [r for r in pipeline.history.records.values() if r.run_id == run.run_id]
    assert records and all(r.accepted == accepted for r in records)
    ((repo, number, reply),) = replies(pipeline)
    assert (repo, number) == ("PaddlePaddle/Paddle", 12091)
    assert reply.startswith(f"Accepted by @{COMMENTER} for distkpi/resnet50 at {HEAD[:10]}: ")


def test_a_reader_is_told_who_may_accept_and_nothing_changes() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    statuses = list(pipeline.github.statuses)

    answer = pipeline.acceptances.asked(comment(), "c-1")

    expected = (
        f"@{COMMENTER}: only people with write, maintain or admin permission on "
        "PaddlePaddle/Paddle may accept a regression (yours: read). Nothing changed."
    )
    assert answer.refused == expected
    assert replies(pipeline) == [("PaddlePaddle/Paddle", 12091, expected)]
    assert pipeline.github.statuses == statuses
    assert pipeline.runs.get(run.run_id).accepted is None  # type: ignore[union-attr]


def test_the_same_delivery_twice_accepts_once() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "maintain"
    assert pipeline.acceptances.asked(comment(), "c-1").accepted
    assert pipeline.acceptances.asked(comment(), "c-1").duplicate
    assert len(replies(pipeline)) == 1


def test_a_new_push_after_accepting_is_judged_afresh() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "admin"
    pipeline.acceptances.asked(comment(), "c-1")

    pipeline.clock.advance(60)
    newer = slowed_pull_request(pipeline, sha="e" * 40, delivery="pr-2")

    assert newer.accepted is None
    state, description = pipeline.states()[-1]
    assert state == "failure" and "accepted" not in description


def test_the_merge_of_an_accepted_pull_request_starts_the_new_level() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "write"
    pipeline.acceptances.asked(comment(), "c-1")
    pipeline.clock.advance(60)

    merged = decide(parse("pull_request", payload("pull_request_closed")), ["develop"])
    assert merged == Merged(
        "PaddlePaddle/Paddle", "develop", HEAD, "c4295bd74fb0f4fda03689c3df3f2803b658fd85", 12091
    )
    assert isinstance(merged, Merged)
    pipeline.acceptances.merged(merged)
    pipeline.acceptances.merged(merged)  # the fast-forward's push said it too: one reset

    (reset,) = pipeline.history.resets("PaddlePaddle/Paddle", "develop", "resnet50")
    assert (reset.config, reset.reason, reset.who) == ("4x8-8ps", REASON, f"@{COMMENTER}")
    assert reset.at == "2026-11-30T03:01:00+00:00"
    # the merge commit runs as slow as the accepted head: the new level alerts on nothing
    pipeline.clock.advance(60)
    report_all(pipeline, start(pipeline, "d-merge", "c4295bd74fb0f4fda03689c3df3f2803b658fd85"))
    assert pipeline.states()[-1][0] == "success"
    assert pipeline.topic.messages == []


def test_a_push_of_the_accepted_head_itself_starts_the_new_level() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "write"
    pipeline.acceptances.asked(comment(), "c-1")
    from tests.service.pipeline import pushed

    assert pipeline.acceptances.pushed(pushed(HEAD))
    assert [
        r.config for r in pipeline.history.resets("PaddlePaddle/Paddle", "develop", "resnet50")
    ] == ["4x8-8ps"]
    assert pipeline.acceptances.pushed(pushed("d" * 40)) == []


def test_a_suite_that_forbids_accepting_a_kpi_refuses_with_the_reason() -> None:
    pipeline = Pipeline()
    suite = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    acceptable = "verdict:\n  acceptable: [throughput, trainer_gpu_memory_mib]\n"
    pipeline.store.put_bytes(
        "suites/resnet50.yaml", suite.replace("verdict:\n", acceptable).encode()
    )
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "write"

    answer = pipeline.acceptances.asked(comment(), "c-1")

    expected = (
        f"@{COMMENTER}: distkpi/resnet50 cannot be accepted: the suite's verdict.acceptable "
        "(throughput, trainer_gpu_memory_mib) does not allow accepting efficiency, speedup. "
        "Nothing changed."
    )
    assert answer.refused == expected
    assert replies(pipeline)[-1][2] == expected
    assert pipeline.runs.get(run.run_id).accepted is None  # type: ignore[union-attr]
    assert pipeline.states()[-1][0] == "failure"


def test_the_check_runs_button_offers_and_accepts_the_run_it_is_on() -> None:
    pipeline = Pipeline(checks=True)
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    (check,) = [c for c in pipeline.github.checks.values() if c["external_id"] == run.run_id]
    assert check["conclusion"] == "failure"
    assert [a["identifier"] for a in check["actions"]] == ["accept"]

    pressed = payload("check_run_requested_action")
    pressed["check_run"]["external_id"] = run.run_id
    asked = decide(parse("check_run", pressed), ["develop"], "904512")
    assert isinstance(asked, AcceptAsked) and asked.via is Via.CHECK_RUN
    pipeline.github.permissions[asked.login] = "write"
    assert pipeline.acceptances.asked(asked, "b-1").accepted == (run.run_id,)

    assert check["conclusion"] == "success"
    assert check["output"]["title"] == (
        f"accepted by {AT}{asked.login}: accepted with the check run's Accept regression button"
    )
    assert check["actions"] == []
    assert "### Accepted" in check["output"]["summary"]


def test_a_run_not_failed_has_nothing_to_accept() -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    started = pipeline.starter.handle_delivery(pull_request(), "pr-1")
    report_all(pipeline, started.runs[0])
    pipeline.github.permissions[COMMENTER] = "write"
    answer = pipeline.acceptances.asked(comment(), "c-1")
    assert answer.refused == (
        f"@{COMMENTER}: no failed distkpi run of this head to accept. Nothing changed."
    )


def suite_comment(pipeline: Pipeline) -> dict[str, Any]:
    """The suite's own pull-request comment as it stands, with its id."""
    (comment,) = [
        {"id": i, **c}
        for i, c in pipeline.github.comments.items()
        if c["body"].startswith("<!-- distkpi:")
    ]
    return comment


def test_accepting_edits_the_pull_requests_comment_as_the_check_run_says_it() -> None:
    pipeline = Pipeline(checks=True)
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    before = suite_comment(pipeline)
    assert before["body"].splitlines()[1] == "### distkpi/resnet50: failure"
    pipeline.github.permissions[COMMENTER] = "write"

    assert pipeline.acceptances.asked(comment(), "c-1").accepted == (run.run_id,)

    after = suite_comment(pipeline)
    assert (after["id"], after["edits"]) == (before["id"], 1)
    (check,) = [c for c in pipeline.github.checks.values() if c["external_id"] == run.run_id]
    lines = after["body"].splitlines()
    assert (
        lines[1]
        == f"### distkpi/{run.model}: {check['conclusion']}"
        == ("### distkpi/resnet50: success")
    )
    title = f"accepted by {AT}{COMMENTER}: {REASON}"
    assert lines[3] == f"**{check['output']['title']}**" == f"**{title}**"
    # the check run's closing section, word for word; the table kept, the hint gone
    accepted = check["output"]["summary"][check["output"]["summary"].index("### Accepted") :]
    assert after["body"].endswith(accepted)
    assert "| 4x8-8ps | throughput (samples/s) |" in after["body"]
    assert "/distkpi accept" not in after["body"]


def test_a_suite_whose_comment_is_never_gets_none_on_accepting() -> None:
    pipeline = Pipeline()
    suite = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    pipeline.store.put_bytes("suites/resnet50.yaml", (suite + "comment: never\n").encode())
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    pipeline.github.permissions[COMMENTER] = "write"

    assert pipeline.acceptances.asked(comment(), "c-1").accepted == (run.run_id,)

    assert [c["body"][:9] for c in pipeline.github.comments.values()] == ["Accepted "]
    assert pipeline.states()[-1][0] == "success"


def test_github_down_while_editing_the_comment_loses_no_accept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = Pipeline()
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    before = dict(suite_comment(pipeline))
    pipeline.github.permissions[COMMENTER] = "write"

    def down(repo: str, comment_id: int, body: str) -> None:
        raise GitHubError("GitHub answered 503 to PATCH")

    monkeypatch.setattr(pipeline.github, "update_issue_comment", down)
    answer = pipeline.acceptances.asked(comment(), "c-1")

    assert answer.accepted == (run.run_id,) and answer.refused is None
    assert pipeline.runs.get(run.run_id).accepted is not None  # type: ignore[union-attr]
    assert pipeline.states()[-1] == ("success", f"accepted by {AT}{COMMENTER}: {REASON}")
    assert suite_comment(pipeline) == before
    assert pipeline.counts.totals["CommentFailures"] == 1
    ((_, _, reply),) = replies(pipeline)
    assert reply.startswith(f"Accepted by @{COMMENTER}")


def accepted_after_a_diagnosis(pipeline: Pipeline) -> RunRecord:
    """A slowed pull request's run, its slow config diagnosed (no trace was left), then
    accepted by a writer's comment."""
    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    diagnosis = {"problems": ["no trace was left by the command"]}
    pipeline.store.put_json(diagnosis_key(run.run_id, "4x8-8ps"), diagnosis)
    pipeline.github.permissions[COMMENTER] = "write"
    assert pipeline.acceptances.asked(comment(), "c-1").accepted == (run.run_id,)
    return run


def test_the_accepted_comment_keeps_the_lines_of_the_runs_diagnosis() -> None:
    pipeline = Pipeline()
    accepted_after_a_diagnosis(pipeline)

    body = suite_comment(pipeline)["body"]
    assert "**Why it changed** (profiled base and head):" in body
    assert "not diagnosed: no trace was left by the command" in body
    assert "### Accepted" in body


def test_the_accepted_check_run_keeps_the_runs_diagnosis_section() -> None:
    pipeline = Pipeline(checks=True)
    run = accepted_after_a_diagnosis(pipeline)

    (check,) = [c for c in pipeline.github.checks.values() if c["external_id"] == run.run_id]
    summary = check["output"]["summary"]
    assert check["conclusion"] == "success"
    assert "#### Why it changed (profiled base and head)" in summary
    assert "not diagnosed: no trace was left by the command" in summary
    assert summary.index("Why it changed") < summary.index("### Accepted")


def test_an_accept_reads_the_runs_diagnoses_once_for_its_check_run_and_its_comment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = Pipeline(checks=True)
    reads: list[str] = []
    open_path = FakeRunSource.open

    def counted(source: FakeRunSource, path: str) -> Any:
        if path.endswith("diagnosis.json"):
            reads.append(path)
        return open_path(source, path)

    with_history(pipeline)
    run = slowed_pull_request(pipeline)
    pipeline.store.put_json(diagnosis_key(run.run_id, "4x8-8ps"), {"problems": ["no trace"]})
    pipeline.github.permissions[COMMENTER] = "write"
    monkeypatch.setattr(FakeRunSource, "open", counted)
    assert pipeline.acceptances.asked(comment(), "c-1").accepted == (run.run_id,)
    # one S3 GET per config, not one for the check run and another for the comment
    assert sorted(reads) == sorted(f"{c.name}/diagnosis.json" for c in run.spec.configs)
    assert "not diagnosed: no trace" in suite_comment(pipeline)["body"]
