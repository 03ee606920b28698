"""The pull request's one comment per suite and the owners' alerts, through the services as
the Lambdas wire them (tests/service/pipeline.py): a second run edits the comment it made,
an unchanged outcome leaves it, `comment: never` writes none; alerts name the suite's owners
(its own, else CODEOWNERS at the commit) and reach the chat, which, down, loses nothing else."""

from __future__ import annotations

from distkpi.domain.github.webhook import Trigger
from tests.fakes import ROOT, FakeChat, plain_report
from tests.service.pipeline import Pipeline, report_all, start
from tests.service.test_texts import pull_request, with_history

REPO = "PaddlePaddle/Paddle"
SUITE = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()


def with_suite(pipeline: Pipeline, extra: str) -> None:
    pipeline.store.put_bytes("suites/resnet50.yaml", (SUITE + extra).encode())


def run_pull_request(pipeline: Pipeline, sha: str, at: str, **scale: float) -> str:
    trigger, _ = pull_request(sha, at)
    started = pipeline.starter.handle_delivery(trigger, f"d-{sha[:4]}")
    (run_id,) = started.runs
    report_all(pipeline, run_id, **scale)
    return run_id


def comments(pipeline: Pipeline) -> list[dict]:
    return list(pipeline.github.comments.values())


def test_a_pull_requests_second_run_edits_its_one_comment() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    trigger, _ = pull_request("a" * 40, "2026-11-30T03:00:00Z")
    assert isinstance(trigger, Trigger) and trigger.pull_request is not None

    run_pull_request(pipeline, "a" * 40, "2026-11-30T03:00:00Z", **{"4x8-8ps": 0.7})
    (first,) = comments(pipeline)
    assert first["number"] == trigger.pull_request and first["edits"] == 0
    assert first["body"].startswith(
        "<!-- distkpi:suite=resnet50 -->\n### distkpi/resnet50: failure"
    )
    assert "comment `/distkpi accept <reason>` to accept (writers only)" in first["body"]

    run_pull_request(pipeline, "b" * 40, "2026-11-30T04:00:00Z")
    (edited,) = comments(pipeline)
    assert edited["edits"] == 1
    assert edited["body"].startswith(
        "<!-- distkpi:suite=resnet50 -->\n### distkpi/resnet50: success"
    )
    assert "/distkpi accept" not in edited["body"] and "bbbbbbbbbb" in edited["body"]
    assert pipeline.counts.totals["CommentsWritten"] == 2


def test_on_change_leaves_the_comment_when_the_outcome_is_the_same() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    run_pull_request(pipeline, "a" * 40, "2026-11-30T03:00:00Z")
    run_pull_request(pipeline, "b" * 40, "2026-11-30T04:00:00Z")
    (comment,) = comments(pipeline)
    assert comment["edits"] == 0 and "aaaaaaaaaa" in comment["body"]


def test_always_edits_after_every_run_and_never_writes_none() -> None:
    always = Pipeline(draw=plain_report)
    with_suite(always, "comment: always\n")
    with_history(always)
    run_pull_request(always, "a" * 40, "2026-11-30T03:00:00Z")
    run_pull_request(always, "b" * 40, "2026-11-30T04:00:00Z")
    (comment,) = comments(always)
    assert comment["edits"] == 1 and "bbbbbbbbbb" in comment["body"]

    never = Pipeline(draw=plain_report)
    with_suite(never, "comment: never\n")
    with_history(never)
    run_pull_request(never, "a" * 40, "2026-11-30T03:00:00Z", **{"4x8-8ps": 0.7})
    assert comments(never) == []
    assert never.states()[-1][0] == "failure"  # the status goes out all the same


def test_a_comment_a_person_deleted_is_posted_again_and_its_new_id_kept() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    run_pull_request(pipeline, "a" * 40, "2026-11-30T03:00:00Z", **{"4x8-8ps": 0.7})
    pipeline.github.comments.clear()
    run_pull_request(pipeline, "b" * 40, "2026-11-30T04:00:00Z")
    (comment,) = comments(pipeline)
    assert "success" in comment["body"].splitlines()[1]
    (kept,) = pipeline.comments.kept.values()
    assert kept.comment_id == next(iter(pipeline.github.comments))


def test_github_down_leaves_the_comment_to_the_sweeper_which_writes_it_once() -> None:
    pipeline = Pipeline(draw=plain_report)
    with_history(pipeline)
    pipeline.github.down = True
    run_pull_request(pipeline, "a" * 40, "2026-11-30T03:00:00Z", **{"4x8-8ps": 0.7})
    assert comments(pipeline) == [] and pipeline.counts.totals["CommentFailures"] == 1
    pipeline.github.down = False
    assert pipeline.publisher.republish_unpublished() == 1
    (comment,) = comments(pipeline)
    assert comment["edits"] == 0 and "failure" in comment["body"].splitlines()[1]


def test_a_push_regression_names_the_owners_on_the_topic_and_in_the_chat() -> None:
    pipeline = Pipeline(chat=FakeChat(), draw=plain_report)
    with_suite(pipeline, "owners: [octocat, '@PaddlePaddle/perf']\n")
    with_history(pipeline)
    report_all(pipeline, start(pipeline, "d-slow", "d" * 40), **{"4x8-8ps": 0.7})
    ((subject, body),) = pipeline.topic.messages
    assert subject == "distkpi: resnet50 regressed on PaddlePaddle/Paddle develop"
    assert body.endswith("\nFor: @octocat @PaddlePaddle/perf\n")
    assert pipeline.chat is not None
    (message,) = pipeline.chat.messages
    assert message["blocks"][0]["text"]["text"].startswith("distkpi/resnet50 failure on")
    assert {"type": "mrkdwn", "text": "*For:* @octocat @PaddlePaddle/perf"} in [
        b.get("text") for b in message["blocks"]
    ]


def test_without_owners_of_its_own_a_suite_has_its_codeowners_at_the_commit() -> None:
    pipeline = Pipeline(chat=FakeChat(), draw=plain_report)
    with_history(pipeline)
    codeowners = "* @PaddlePaddle/core\n/python/paddle/vision/ @vision-team\n"
    pipeline.github.files[(".github/CODEOWNERS", "d" * 40)] = codeowners
    report_all(pipeline, start(pipeline, "d-slow", "d" * 40), **{"4x8-8ps": 0.7})
    ((_, body),) = pipeline.topic.messages
    assert body.endswith("\nFor: @PaddlePaddle/core\n")
    assert f"contents .github/CODEOWNERS@{'d' * 40}" in pipeline.github.asked


def test_a_chat_that_is_down_loses_nothing_else() -> None:
    chat = FakeChat()
    chat.down = True
    pipeline = Pipeline(chat=chat, draw=plain_report)
    with_history(pipeline)
    report_all(pipeline, start(pipeline, "d-slow", "d" * 40), **{"4x8-8ps": 0.7})
    assert len(pipeline.topic.messages) == 1  # the topic was told
    assert pipeline.states()[-1][0] == "failure"  # the status went out
    assert pipeline.counts.totals["ChatFailures"] == 1
    assert pipeline.runs.unpublished() == []  # and the publication is done


def test_a_pull_requests_failure_alerts_only_when_its_suite_asks() -> None:
    quiet = Pipeline(chat=FakeChat(), draw=plain_report)
    with_history(quiet)
    run_pull_request(quiet, "a" * 40, "2026-11-30T03:00:00Z", **{"4x8-8ps": 0.7})
    assert quiet.topic.messages == [] and quiet.chat is not None and quiet.chat.messages == []

    asking = Pipeline(chat=FakeChat(), draw=plain_report)
    with_suite(asking, "owners: [octocat]\nalert: {pull_requests: true}\n")
    with_history(asking)
    run_pull_request(asking, "a" * 40, "2026-11-30T03:00:00Z", **{"4x8-8ps": 0.7})
    ((subject, body),) = asking.topic.messages
    assert "PaddlePaddle/Paddle pr:" in subject and body.endswith("\nFor: @octocat\n")
    assert asking.chat is not None
    (message,) = asking.chat.messages
    assert " on PaddlePaddle/Paddle pull request #" in message["text"]


def test_the_chat_takes_at_most_its_limit_per_suite_and_hour_then_counts_the_rest() -> None:
    from distkpi.domain.chat.notices import Notice
    from distkpi.services.chat import ChatAlerts
    from tests.fakes import Clock, Counts, FakeChatQuota

    chat, clock, counts = FakeChat(), Clock(), Counts()
    alerts = ChatAlerts(chat, FakeChatQuota(), per_hour=2, count=counts, clock=clock)
    notice = Notice("PaddlePaddle/Paddle/resnet50", "distkpi/resnet50 failure", "tput -23%")
    other = Notice("PaddlePaddle/Paddle/bert", "distkpi/bert failure", "tput -9%")
    sent = [alerts.send(notice) for _ in range(5)]
    assert sent == [True, True, True, False, False]
    assert [m["text"] for m in chat.messages[:2]] == ["distkpi/resnet50 failure"] * 2
    assert chat.messages[2]["text"] == (
        "distkpi: PaddlePaddle/Paddle/resnet50 sent 2 alerts this hour; its further alerts this "
        "hour go to the SNS topic only, and the next message here counts them."
    )
    assert alerts.send(other)  # another suite has its own limit
    assert counts.totals["ChatMessagesHeldBack"] == 2
    # the next hour's first message says how many the chat did not show
    clock.advance(3600)
    assert alerts.send(notice)
    (note,) = chat.messages[-1]["blocks"][-1]["elements"]
    assert note["text"] == (
        "3 more alert(s) of PaddlePaddle/Paddle/resnet50 in the hour before were not posted "
        "here (rate limit); the SNS topic has every one."
    )
