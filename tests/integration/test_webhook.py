"""What each kind of bad or uninteresting delivery gets, and that it starts nothing."""

from __future__ import annotations

import json

from tests.integration.conftest import Stack, event


def nothing_started(stack: Stack) -> bool:
    return stack.jobs() == [] and stack.github.statuses == []


def test_missing_signature_is_401(stack: Stack) -> None:
    response = stack.webhook("pull_request", signature="")
    assert response["statusCode"] == 401
    assert nothing_started(stack)


def test_forged_signature_is_401(stack: Stack) -> None:
    response = stack.webhook("pull_request", signature="sha256=" + "0" * 64)
    assert response["statusCode"] == 401
    assert nothing_started(stack)


def test_signature_over_other_bytes_is_401(stack: Stack) -> None:
    from distkpi.domain.webhook import sign
    from tests.integration.conftest import WEBHOOK_SECRET

    body = json.dumps(event("pull_request")["payload"]).encode()
    forged = sign(WEBHOOK_SECRET.encode(), body + b" ")
    assert stack.webhook("pull_request", body=body, signature=forged)["statusCode"] == 401
    assert nothing_started(stack)


def test_base64_body_is_verified_on_its_decoded_bytes(stack: Stack) -> None:
    response = stack.webhook("pull_request", base64_body=True)
    assert response["statusCode"] == 201


def test_body_over_1_mib_is_413(stack: Stack) -> None:
    body = b'{"pad": "' + b"x" * (1024 * 1024) + b'"}'
    assert stack.webhook("pull_request", body=body)["statusCode"] == 413
    assert nothing_started(stack)


def test_malformed_json_is_400(stack: Stack) -> None:
    assert stack.webhook("pull_request", body=b'{"action": ')["statusCode"] == 400
    assert stack.webhook("pull_request", body=b"[1, 2]")["statusCode"] == 400
    assert nothing_started(stack)


def test_ping_is_200(stack: Stack) -> None:
    response = stack.webhook("ping")
    assert response["statusCode"] == 200 and response["json"]["message"] == "pong"
    assert nothing_started(stack)


def test_other_actions_and_events_are_202_and_ignored(stack: Stack) -> None:
    closed = {**event("pull_request")["payload"], "action": "closed"}
    response = stack.webhook("pull_request", payload=closed)
    assert response["statusCode"] == 202
    assert "closed" in response["json"]["message"]
    issues = stack.webhook("ping", payload={"action": "opened"})
    assert issues["statusCode"] == 200  # a ping stays a ping whatever its body
    assert nothing_started(stack)


def test_an_unknown_event_is_202(stack: Stack) -> None:
    payload = {"action": "created", "issue": {"number": 1}}
    response = stack.webhook("ping", payload=payload, github_event="issue_comment")
    assert response["statusCode"] == 202
    assert "issue_comment" in response["json"]["message"]
    assert nothing_started(stack)


def test_an_invalid_suite_gets_an_error_status_and_the_others_still_run(stack: Stack) -> None:
    from tests.integration.conftest import BUCKET

    bad = b"name: broken\ntarget_accuracy: 0.6\nconfigs: []\n"
    stack.s3.put_object(Bucket=BUCKET, Key="suites/broken.yaml", Body=bad)
    response = stack.webhook("pull_request")
    assert response["statusCode"] == 201
    assert response["json"]["invalid_suites"] == ["broken.yaml"]
    assert [r.split("-")[0] for r in response["json"]["runs"]] == ["resnet50"]
    by_context = {s["context"]: s for s in stack.github.statuses}
    assert by_context["distkpi/resnet50"]["state"] == "pending"
    error = by_context["distkpi/broken.yaml"]
    assert error["state"] == "error"
    # the key, not the bucket, leads: GitHub keeps 140 characters and the fields need them
    assert error["description"].startswith("suites/broken.yaml: invalid suite: ")
    assert "accuracy_pass: Field required" in error["description"]
    assert len(error["description"]) <= 140
