"""Accepting a regression through the real webhook handler, on GitHub's recorded
issue_comment, check_run requested_action and merged pull_request deliveries (tests/events/),
with the permission asked of the GitHub stand-in and the replies posted to it; the suite's
pull-request comment edited in place once accepted, GitHub's failures on the edit retried."""

from __future__ import annotations

import copy
from typing import Any

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository
from tests.integration.conftest import TABLE, Stack, event
from tests.integration.test_flow import deliver_all, run_all_nodes
from tests.integration.test_github_app import checks_named, open_pull_request
from tests.integration.test_history import seed_history

COMMENTER = "Codertocat"  # who wrote the recorded comment
REASON = "trades 8% throughput for 30% less GPU memory"
MARKER = "<!-- distkpi:suite=resnet50 -->"


def failed_pull_request(stack: Stack) -> str:
    seed_history(stack, 12)
    run_id = open_pull_request(stack)
    deliver_all(stack, run_all_nodes(stack, run_id, scale={"4x8-8ps": 0.75}), copies=1)
    (check,) = checks_named(stack)
    assert check["conclusion"] == "failure"
    return run_id


def replies(stack: Stack) -> list[dict[str, Any]]:
    """The comments posted in reply to people; the suite's own pull-request comment (its
    hidden marker first) left out."""
    return [c for c in stack.github.comments if not c["body"].startswith("<!-- distkpi:suite=")]


def test_a_forged_accept_comment_is_refused_like_any_forged_delivery(app_stack: Stack) -> None:
    failed_pull_request(app_stack)
    app_stack.github.set_permission(COMMENTER, "admin")
    for forged in ("", "sha256=" + "0" * 64):
        response = app_stack.webhook("issue_comment", signature=forged)
        assert response["statusCode"] == 401
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "failure"
    assert replies(app_stack) == []


def test_a_writers_comment_turns_the_check_success_with_who_and_why(app_stack: Stack) -> None:
    run_id = failed_pull_request(app_stack)
    (check,) = checks_named(app_stack)
    assert [a["identifier"] for a in check["actions"]] == ["accept"]
    app_stack.github.set_permission(COMMENTER, "write")

    response = app_stack.webhook("issue_comment")

    assert response["statusCode"] == 200, response
    assert response["json"] == {"message": "accepted", "accepted": [run_id]}
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "success"
    assert check["output"]["title"] == f"accepted by @\u200b{COMMENTER}: {REASON}"
    assert check["actions"] == []
    (reply,) = replies(app_stack)
    assert (reply["repo"], reply["number"]) == ("PaddlePaddle/Paddle", 12091)
    assert reply["body"].startswith(f"Accepted by @{COMMENTER} for distkpi/resnet50 at ")
    asked = [r for r in app_stack.github.requested if "/collaborators/" in r]
    assert asked == [f"GET /repos/PaddlePaddle/Paddle/collaborators/{COMMENTER}/permission"]


def test_a_readers_comment_gets_a_reply_and_changes_nothing(app_stack: Stack) -> None:
    failed_pull_request(app_stack)
    app_stack.github.set_permission(COMMENTER, "triage")

    response = app_stack.webhook("issue_comment")

    expected = (
        f"@{COMMENTER}: only people with write, maintain or admin permission on "
        "PaddlePaddle/Paddle may accept a regression (yours: triage). Nothing changed."
    )
    assert response["statusCode"] == 202
    assert response["json"] == {"message": expected, "accepted": []}
    assert [c["body"] for c in replies(app_stack)] == [expected]
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "failure"


def test_the_check_runs_accept_button_accepts_its_run(app_stack: Stack) -> None:
    run_id = failed_pull_request(app_stack)
    pressed: dict[str, Any] = copy.deepcopy(event("check_run_requested_action")["payload"])
    pressed["check_run"]["external_id"] = run_id
    app_stack.github.set_permission(pressed["sender"]["login"], "maintain")

    response = app_stack.webhook("check_run_requested_action", payload=pressed)

    assert response["json"] == {"message": "accepted", "accepted": [run_id]}
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "success"


def test_the_merge_of_the_accepted_head_starts_a_new_baseline_level(app_stack: Stack) -> None:
    run_id = failed_pull_request(app_stack)
    app_stack.github.set_permission(COMMENTER, "write")
    app_stack.webhook("issue_comment")

    response = app_stack.webhook("pull_request_closed")

    assert response["statusCode"] == 200
    assert response["json"] == {"message": "merged", "new_baseline_of": [run_id]}
    history = HistoryRepository(DynamoTable(TABLE, app_stack.table))
    (reset,) = history.resets("PaddlePaddle/Paddle", "develop", "resnet50")
    assert (reset.config, reset.reason, reset.who) == ("4x8-8ps", REASON, f"@{COMMENTER}")


def suite_comment(stack: Stack) -> dict[str, Any]:
    (comment,) = [c for c in stack.github.comments if c["body"].startswith(MARKER)]
    return comment


def test_accepting_edits_the_suites_comment_in_place_through_a_failed_attempt(
    app_stack: Stack,
) -> None:
    failed_pull_request(app_stack)
    before = suite_comment(app_stack)
    assert before["body"].splitlines()[1] == "### distkpi/resnet50: failure"
    app_stack.github.set_permission(COMMENTER, "write")
    patch = f"PATCH /repos/PaddlePaddle/Paddle/issues/comments/{before['id']}"
    app_stack.github.fail_next(502, on=patch)  # the edit's first attempt: GitHub's 502

    assert app_stack.webhook("issue_comment")["json"]["message"] == "accepted"

    after = suite_comment(app_stack)
    assert (after["id"], after["edits"]) == (before["id"], 1)
    (check,) = checks_named(app_stack)
    lines = after["body"].splitlines()
    assert lines[1] == "### distkpi/resnet50: success"
    assert lines[3] == f"**{check['output']['title']}**"
    assert "### Accepted" in after["body"] and "/distkpi accept" not in after["body"]
    assert [r for r in app_stack.github.requested if r == patch] == [patch, patch]


def test_github_down_through_every_retry_of_the_edit_keeps_the_accept(
    app_stack: Stack,
) -> None:
    run_id = failed_pull_request(app_stack)
    before = suite_comment(app_stack)
    app_stack.github.set_permission(COMMENTER, "write")
    patch = f"PATCH /repos/PaddlePaddle/Paddle/issues/comments/{before['id']}"
    app_stack.github.fail_next(*[503] * 5, on=patch)

    response = app_stack.webhook("issue_comment")

    assert response["json"] == {"message": "accepted", "accepted": [run_id]}
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "success"
    assert suite_comment(app_stack) == before
    assert [r for r in app_stack.github.requested if r == patch] == [patch] * 5
