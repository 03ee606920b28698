"""What each kind of bad or uninteresting delivery gets, and that it starts nothing."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

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
    from distkpi.domain.github.webhook import sign
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
    assert "command: Field required" in error["description"]
    assert len(error["description"]) <= 140


def mutated(name: str, change: Callable[[dict[str, Any]], None]) -> bytes:
    payload = copy.deepcopy(event(name)["payload"])
    change(payload)
    return json.dumps(payload).encode()


def set_at(*path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(payload: dict[str, Any]) -> None:
        node = payload
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


NOT_WHAT_GITHUB_SENDS = [
    ("pull_request", set_at("pull_request", "head", "sha", value="A" * 40), "head.sha"),
    ("pull_request", set_at("pull_request", "head", "sha", value="abc"), "head.sha"),
    ("pull_request", set_at("pull_request", "base", "sha", value="z" * 40), "base.sha"),
    ("push", set_at("after", value="9F4E1C2B7A6D5E4F3A2B1C0D9E8F7A6B5C4D3E2F"), "after"),
    ("pull_request", set_at("repository", "full_name", value="no-slash"), "full_name"),
    ("pull_request", set_at("repository", "full_name", value="a/b/c"), "full_name"),
    ("push", set_at("repository", "full_name", value="a/../b c"), "full_name"),
    ("pull_request", set_at("number", value=10**38), "number"),
    ("pull_request", set_at("number", value=-1), "number"),
    ("pull_request", set_at("number", value=1.5), "number"),
    ("pull_request", set_at("pull_request", "head", "ref", value="x" * 300), "head.ref"),
    ("pull_request", set_at("pull_request", "base", "ref", value="develop\x00"), "base.ref"),
]


@pytest.mark.parametrize(("name", "change", "field"), NOT_WHAT_GITHUB_SENDS)
def test_a_signed_payload_github_would_never_send_is_400_naming_the_field(
    stack: Stack, name: str, change: Callable[[dict[str, Any]], None], field: str
) -> None:
    body = mutated(name, change)
    response = stack.webhook(name, body=body, delivery=f"bad-{field}")
    assert response["statusCode"] == 400
    assert field in response["json"]["message"]
    assert nothing_started(stack)
    assert not stack.table.get_item(Key={"PK": f"DELIVERY#bad-{field}", "SK": "DELIVERY"}).get(
        "Item"
    )


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"action": "opened", "number": NaN}', "NaN is not a JSON number"),
        (b'{"action": "opened", "number": Infinity}', "Infinity is not a JSON number"),
        (b'{"a": ' * 1000 + b"1" + b"}" * 1000, "nested too deeply"),
    ],
)
def test_json_that_is_not_plain_json_is_400(stack: Stack, body: bytes, says: str) -> None:
    response = stack.webhook("pull_request", body=body)
    assert response["statusCode"] == 400
    assert says in response["json"]["message"]
    assert nothing_started(stack)


IMAGED = """
name: imaged
image: "registry.example/bench:{sha}"
command: [python, bench.py]
target_accuracy: 0.5
accuracy_pass: 1
accuracy_tolerance: 0.01
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, batch_size: 8}
"""


def test_a_suite_image_gets_its_own_job_definition_revision_once(stack: Stack) -> None:
    from tests.integration.conftest import BUCKET

    stack.s3.put_object(Bucket=BUCKET, Key="suites/imaged.yaml", Body=IMAGED.encode())
    other = IMAGED.replace("name: imaged", "name: elsewhere") + "repos: [someone/else]\n"
    stack.s3.put_object(Bucket=BUCKET, Key="suites/elsewhere.yaml", Body=other.encode())
    first = stack.webhook("pull_request", delivery="d-1")["json"]["runs"]
    second = stack.webhook("pull_request", delivery="d-2")["json"]["runs"]
    # the suite for another repository starts nothing here
    assert sorted(r.split("-")[0] for r in first) == ["imaged", "resnet50"]
    sha = event("pull_request")["payload"]["pull_request"]["head"]["sha"]
    definitions = set()
    for job in stack.jobs():
        request = submitted_request(stack, job["jobId"])
        if job["jobName"].startswith("distkpi-imaged"):
            definitions.add(request["jobDefinition"])
    # one new revision, reused by the second delivery (moto describes no multi-node
    # definition's containers, so only a single-node config is checked here)
    (definition,) = definitions
    assert definition.endswith("distkpi-local-single:2")
    (described,) = stack.batch.describe_job_definitions(jobDefinitions=[definition])[
        "jobDefinitions"
    ]
    assert described["containerProperties"]["image"] == f"registry.example/bench:{sha}"
    assert len(first) == len(second) == 2


def submitted_request(stack: Stack, job_id: str) -> dict[str, Any]:
    return stack.table.get_item(Key={"PK": f"JOB#{job_id}", "SK": "JOB"})["Item"]["request"]  # type: ignore[no-any-return]
