"""A calibration started as `distkpi calibrate --start` starts it: a repository dispatch POSTed
to the GitHub stand-in, which answers 204 and delivers the signed repository_dispatch
webhook to the real webhook handler on moto; what GitHub refuses, and a delivery the
webhook refuses, start nothing."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests

from distkpi.domain.layout import run_spec_key
from distkpi.exceptions import GitHubError
from distkpi_cli.github_dispatch import ask_calibration
from distkpi_cli.local.aws_stack import BUCKET, TABLE
from distkpi_cli.main import main
from tests.integration.conftest import GITHUB_TOKEN, ROOT, WEBHOOK_SECRET, Stack

REPO = "PaddlePaddle/Paddle"  # an allowed repository of the stack
SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
ASKED = {"sha": SHA, "model": "local-paired", "jobs": 2, "branch": "develop"}


@pytest.fixture
def hooked(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Stack:
    """The stack with the paired local suite, and the stand-in delivering its webhooks to
    the webhook function, signed with the stack's webhook secret."""
    stack.s3.delete_object(Bucket=BUCKET, Key="suites/resnet50.yaml")
    paired = (ROOT / "infra" / "suites" / "local-paired.yaml").read_bytes()
    stack.s3.put_object(Bucket=BUCKET, Key="suites/local-paired.yaml", Body=paired)

    monkeypatch.setattr(stack.github, "webhook", stack.deliver)
    monkeypatch.setattr(stack.github, "webhook_secret", WEBHOOK_SECRET)
    return stack


def delivered(stack: Stack, count: int = 1) -> list[dict[str, Any]]:
    """GitHub delivers after it answers: the deliveries once ``count`` are made."""
    deadline = time.monotonic() + 30
    while len(stack.github.deliveries) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(stack.github.deliveries)


def test_a_dispatch_starts_the_a_a_runs_through_the_signed_webhook(hooked: Stack) -> None:
    ask_calibration(hooked.github.url, REPO, GITHUB_TOKEN, ASKED)
    (delivery,) = delivered(hooked)
    assert delivery["event"] == "repository_dispatch"
    assert delivery["payload"]["action"] == "distkpi-calibrate"
    assert delivery["payload"]["client_payload"] == ASKED
    assert delivery["payload"]["repository"]["full_name"] == REPO
    assert delivery["status_code"] == 201, delivery["answer"]
    runs = delivery["answer"]["runs"]
    assert len(runs) == 2
    for run_id in runs:
        body = hooked.s3.get_object(Bucket=BUCKET, Key=run_spec_key(run_id))["Body"].read()
        assert json.loads(body)["paired"] == {
            "base_sha": SHA,
            "max_pairs": 4,
            "warmup": True,
            "calibration": True,
        }
        names = [
            j["jobName"] for j in hooked.jobs() if j["jobName"].startswith(f"distkpi-{run_id}-")
        ]
        assert sorted(n.removeprefix(f"distkpi-{run_id}-") for n in names) == [
            "1x1",
            "1x1-1ps",
            "1x2",
        ]
    assert [(s["context"], s["state"]) for s in hooked.github.statuses] == [
        ("distkpi/local-paired/calibration", "pending")
    ] * 2


def test_github_refuses_a_dispatch_without_its_token_or_event_type(hooked: Stack) -> None:
    with pytest.raises(GitHubError, match="401: Bad credentials"):
        ask_calibration(hooked.github.url, REPO, "not-the-token", ASKED)
    url = f"{hooked.github.url}/repos/{REPO}/dispatches"
    auth = {"Authorization": f"Bearer {GITHUB_TOKEN}"}
    for body, problem in (
        ({"client_payload": ASKED}, "event_type is required"),
        ({"event_type": "distkpi-calibrate", "client_payload": [SHA]}, "not an object"),
        (
            {"event_type": "distkpi-calibrate", "client_payload": {str(k): k for k in range(11)}},
            "No more than 10 properties",
        ),
    ):
        answer = requests.post(url, json=body, headers=auth, timeout=10)
        assert answer.status_code == 422 and problem in answer.json()["message"]
    time.sleep(0.1)
    assert hooked.github.deliveries == [] and hooked.github.statuses == []


def test_a_dispatch_the_webhook_refuses_starts_nothing(
    hooked: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask_calibration(hooked.github.url, "someone/else", GITHUB_TOKEN, ASKED)
    ask_calibration(hooked.github.url, REPO, GITHUB_TOKEN, ASKED | {"model": "vgg16"})
    monkeypatch.setattr(hooked.github, "webhook_secret", "another secret")
    ask_calibration(hooked.github.url, REPO, GITHUB_TOKEN, ASKED)
    by = {  # each delivery is made as its POST is answered: in any order
        (d["payload"]["repository"]["full_name"], d["payload"]["client_payload"]["model"]): d
        for d in delivered(hooked, 3)
    }
    not_allowed = by[("someone/else", "local-paired")]
    unknown, forged = by[(REPO, "vgg16")], by[(REPO, "local-paired")]
    assert (not_allowed["status_code"], not_allowed["answer"]["message"]) == (
        202,
        "ignored: repository someone/else is not allowed to start runs on this stack",
    )
    assert (unknown["status_code"], unknown["answer"]["message"]) == (
        422,
        "no suite 'vgg16' runs for PaddlePaddle/Paddle",
    )
    assert forged["status_code"] == 401
    assert hooked.jobs() == [] and hooked.github.statuses == []


def test_the_command_starts_them_and_reports_nothing_split_until_they_ran(
    hooked: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    where = ["--repo", REPO, "--model", "local-paired"]
    start = ["calibrate", "--start", *where, "--sha", SHA, "--jobs", "2"]
    assert main([*start, "--api-url", hooked.github.url]) == 0
    assert "asked GitHub for 2 A/A job(s) of local-paired at 9f4e1c2b7a" in capsys.readouterr().out
    (delivery,) = delivered(hooked)
    assert delivery["status_code"] == 201 and len(delivery["answer"]["runs"]) == 2
    # their jobs have not run: the history holds no A/A job yet
    assert main(["calibrate", *where, "--table", TABLE]) == 1
    assert capsys.readouterr().err == (
        "distkpi calibrate: 0 A/A job(s) of local-paired on PaddlePaddle/Paddle develop: "
        "nothing can be split, the allocation's part of the noise needs 2 jobs or more "
        "(distkpi calibrate --start --jobs N)\n"
    )
