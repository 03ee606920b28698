"""The pull request's comment and the owners' chat alert through the real handlers, moto and
the GitHub and chat stand-ins: a second push of a pull request edits the comment the first
made (one comment, found by the id kept in the table), and a regression on develop reaches
the chat naming the owners CODEOWNERS gives, the webhook's URL in no message."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator

import boto3
import pytest

from distkpi.entry import wiring
from distkpi_cli.local.chat_standin import ChatStandIn
from tests.integration.conftest import Stack, event
from tests.integration.test_alerts import push
from tests.integration.test_flow import deliver_all, run_all_nodes
from tests.integration.test_history import seed_history

MARKER = "<!-- distkpi:suite=resnet50 -->"


def pull_request_push(stack: Stack, sha: str, updated_at: str, scale: float) -> str:
    payload = copy.deepcopy(event("pull_request")["payload"])
    payload["action"] = "synchronize"
    payload["pull_request"]["head"]["sha"] = sha
    payload["pull_request"]["updated_at"] = updated_at
    response = stack.webhook("pull_request", payload=payload, delivery=f"pr-{sha[:6]}")
    (run_id,) = response["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id, scale={"4x8-8ps": scale}), copies=1)
    return run_id


def test_a_pull_requests_next_push_edits_its_one_comment(stack: Stack) -> None:
    seed_history(stack, 12)
    number = event("pull_request")["payload"]["number"]
    pull_request_push(stack, "a" * 40, "2026-11-30T03:00:00Z", 0.75)
    (comment,) = stack.github.comments
    assert (comment["number"], comment["edits"]) == (number, 0)
    assert comment["body"].startswith(f"{MARKER}\n### distkpi/resnet50: failure")
    assert "| 4x8-8ps | throughput (samples/s) | 1,800 |" in comment["body"]
    assert "comment `/distkpi accept <reason>` to accept (writers only)" in comment["body"]

    pull_request_push(stack, "b" * 40, "2026-11-30T04:00:00Z", 1.0)
    (edited,) = stack.github.comments
    assert (edited["id"], edited["edits"]) == (comment["id"], 1)
    assert edited["body"].startswith(f"{MARKER}\n### distkpi/resnet50: success")
    assert "/distkpi accept" not in edited["body"]
    requested = [r for r in stack.github.requested if "/comments" in r]
    assert requested == [
        f"POST /repos/PaddlePaddle/Paddle/issues/{number}/comments",
        f"PATCH /repos/PaddlePaddle/Paddle/issues/comments/{comment['id']}",
    ]


@pytest.fixture
def chat(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatStandIn]:
    """A chat stand-in whose URL the stack keeps as its chat webhook's secret."""
    standin = ChatStandIn()
    standin.start()
    name = f"distkpi-test-chat-{uuid.uuid4().hex[:8]}"
    del stack  # the tests' own identity between handler calls
    boto3.client("secretsmanager").create_secret(
        Name=name, SecretString=json.dumps({"url": standin.url})
    )
    monkeypatch.setenv("CHAT_WEBHOOK_SECRET_ARN", name)
    wiring.reset()
    yield standin
    standin.stop()
    wiring.reset()


def test_a_regression_on_develop_reaches_the_chat_naming_the_codeowners(
    stack: Stack, chat: ChatStandIn
) -> None:
    seed_history(stack, 12)
    stack.github.changed_files = []
    stack.github.files[".github/CODEOWNERS"] = "* @PaddlePaddle/core\n*.md @docs-team\n"
    push(stack, "a" * 40, "f" * 40, 1.0)
    assert chat.messages == []
    push(stack, "b" * 40, "a" * 40, 0.75)
    (message,) = chat.messages
    assert message["text"].startswith("distkpi/resnet50 failure on PaddlePaddle/Paddle develop")
    assert chat.path not in json.dumps(message)
    assert {"type": "mrkdwn", "text": "*For:* @PaddlePaddle/core"} in [
        b.get("text") for b in message["blocks"]
    ]
    table = next(b for b in message["blocks"] if b["text"]["text"].startswith("```"))
    assert "4x8-8ps  throughput" in table["text"]["text"]
