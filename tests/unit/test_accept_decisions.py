"""What an accept comment, the check run's accept button, `distkpi accept`'s dispatch and a
merged pull request ask for, on GitHub's recorded deliveries (tests/events/), and what
each is when it asks for nothing or holds what GitHub never sends."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from distkpi.domain.github.acceptance import (
    BUTTON_REASON,
    AcceptAsked,
    Merged,
    Via,
    reason_of_comment,
)
from distkpi.domain.github.webhook import Ignored, Invalid, decide, parse
from tests.fakes import ROOT

APP_ID = "904512"
HEAD = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"


def payload(name: str) -> dict[str, Any]:
    recorded = json.loads((ROOT / "tests" / "events" / f"{name}.json").read_text())
    return copy.deepcopy(recorded["payload"])  # type: ignore[no-any-return]


def decided(event: str, name: str, change: Any = None, app_id: str | None = APP_ID) -> Any:
    p = payload(name)
    if change is not None:
        change(p)
    return decide(parse(event, p), ["develop"], app_id)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("/distkpi accept faster is not the point", "faster is not the point"),
        ("  /distkpi accept   spaced  \nsecond line ignored", "spaced"),
        ("/distkpi accept", ""),
        ("/distkpi acceptance test", None),
        ("LGTM /distkpi accept x", None),
        ("", None),
        (None, None),
    ],
)
def test_only_a_first_line_starting_with_the_command_is_one(
    body: str | None, reason: str | None
) -> None:
    assert reason_of_comment(body) == reason


def test_a_comment_on_an_issue_asks_nothing() -> None:
    def on_issue(p: dict[str, Any]) -> None:
        del p["issue"]["pull_request"]

    assert decided("issue_comment", "issue_comment", on_issue) == Ignored(
        "issue_comment on an issue, not a pull request"
    )


def test_an_edited_comment_asks_nothing() -> None:
    def edited(p: dict[str, Any]) -> None:
        p["action"] = "edited"

    assert decided("issue_comment", "issue_comment", edited) == Ignored(
        "issue_comment action 'edited' asks nothing"
    )


def test_the_button_of_a_distkpi_check_run_asks_to_accept_its_run() -> None:
    assert decided("check_run", "check_run_requested_action") == AcceptAsked(
        "PaddlePaddle/Paddle",
        "codebytere",
        BUTTON_REASON,
        Via.CHECK_RUN,
        pull_request=12091,
        run_id="resnet50-9f4e1c2b7a-00000000",
    )


def test_another_apps_button_or_action_asks_nothing() -> None:
    assert decided("check_run", "check_run_requested_action", app_id="1") == Ignored(
        "check_run of another App"
    )

    def other_action(p: dict[str, Any]) -> None:
        p["requested_action"]["identifier"] = "lgtm|26764"

    assert decided("check_run", "check_run_requested_action", other_action) == Ignored(
        "check_run requested action 'lgtm|26764' is not distkpi's"
    )


def test_a_merged_pull_request_names_its_head_and_merge_commit() -> None:
    assert decided("pull_request", "pull_request_closed") == Merged(
        "PaddlePaddle/Paddle",
        "develop",
        HEAD,
        "c4295bd74fb0f4fda03689c3df3f2803b658fd85",
        12091,
    )


def test_a_pull_request_closed_unmerged_asks_nothing() -> None:
    def unmerged(p: dict[str, Any]) -> None:
        p["pull_request"]["merged"] = False

    assert decided("pull_request", "pull_request_closed", unmerged) == Ignored(
        "pull_request action 'closed' does not start runs"
    )


def test_a_merge_commit_that_is_no_sha_is_invalid() -> None:
    def broken(p: dict[str, Any]) -> None:
        p["pull_request"]["merge_commit_sha"] = "not-a-sha"

    assert decided("pull_request", "pull_request_closed", broken) == Invalid(
        "pull_request.merge_commit_sha", "not a 40-digit lower-case hex commit sha"
    )


def test_distkpi_accepts_dispatch_names_the_run_and_the_reason() -> None:
    def accept(p: dict[str, Any]) -> None:
        p["action"] = "distkpi-accept"
        p["client_payload"] = {"run_id": "resnet50-9f4e1c2b7a-00000000", "reason": " why "}

    asked = decided("repository_dispatch", "repository_dispatch", accept)
    assert isinstance(asked, AcceptAsked)
    assert (asked.run_id, asked.reason, asked.via) == (
        "resnet50-9f4e1c2b7a-00000000",
        "why",
        Via.COMMAND,
    )

    def no_run(p: dict[str, Any]) -> None:
        p["action"] = "distkpi-accept"
        p["client_payload"] = {"reason": "why"}

    assert decided("repository_dispatch", "repository_dispatch", no_run) == Invalid(
        "client_payload.run_id", "not a run id"
    )
