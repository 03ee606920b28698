"""The GitHub stand-in's one request pipeline: a scripted failure (`fail_next`) answers on
every route, and it delivers any event, signed, to the real webhook handler on moto."""

from __future__ import annotations

import pytest
import requests

from tests.integration.conftest import GITHUB_TOKEN, WEBHOOK_SECRET, Stack, event

REPO = "/repos/PaddlePaddle/Paddle"
SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
# each route of the stand-in, as a request GitHub's REST API would take
ROUTES = [
    ("POST", "/app/installations/58120731/access_tokens"),
    ("POST", f"{REPO}/check-runs"),
    ("POST", f"{REPO}/statuses/{SHA}"),
    ("POST", f"{REPO}/dispatches"),
    ("PATCH", f"{REPO}/check-runs/1"),
    ("GET", f"{REPO}/installation"),
    ("GET", f"{REPO}/commits/{SHA}/check-runs"),
    ("GET", f"{REPO}/git/commits/{SHA}"),
    ("GET", f"{REPO}/compare/{SHA}...{SHA}"),
    ("DELETE", f"{REPO}/issues/7/labels/ok-to-test"),
    ("POST", f"{REPO}/issues/7/comments"),
    ("GET", f"{REPO}/issues/7/comments"),
    ("PATCH", f"{REPO}/issues/comments/1"),
    ("GET", f"{REPO}/contents/.github/CODEOWNERS"),
    ("GET", f"{REPO}/collaborators/octocat/permission"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_fail_next_answers_on_every_route(stack: Stack, method: str, path: str) -> None:
    stack.github.fail_next(503)
    headers = {"Authorization": f"Bearer {GITHUB_TOKEN}"}
    url = stack.github.url + path
    failed = requests.request(method, url, headers=headers, json={}, timeout=10)
    assert failed.status_code == 503 and failed.json() == {"message": "scripted failure"}
    again = requests.request(method, url, headers=headers, json={}, timeout=10)
    assert again.status_code != 503
    assert stack.github.requests == 2


def test_any_event_is_delivered_signed_to_the_webhook(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.github, "webhook", stack.deliver)
    monkeypatch.setattr(stack.github, "webhook_secret", WEBHOOK_SECRET)
    pushed = stack.github.deliver("push", event("push")["payload"])
    assert pushed["event"] == "push" and pushed["status_code"] == 201
    assert len(pushed["answer"]["runs"]) == 1
    assert len(stack.jobs()) > 0
    pinged = stack.github.deliver("ping", {"zen": "Keep it logically awesome."})
    assert (pinged["status_code"], pinged["answer"]) == (200, {"message": "pong"})
    monkeypatch.setattr(stack.github, "webhook_secret", "not the stack's")
    forged = stack.github.deliver("push", event("push")["payload"])
    assert forged["status_code"] == 401
