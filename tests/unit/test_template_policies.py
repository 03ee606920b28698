"""What template.yaml, expanded by SAM, grants each function and the benchmark job: the calls
the code makes and no more, and the conditions moto cannot check (the integration tests
enforce the actions and S3 resources)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from distkpi.local.aws_stack import REGION, STACK_NAME
from distkpi.local.iam import Resolver, function_roles, role_statements
from distkpi.local.sam import expand

ROOT = Path(__file__).resolve().parents[2]
NEVER = {
    "dynamodb:Scan",
    "dynamodb:BatchGetItem",
    "s3:DeleteObject",
    "s3:PutObjectAcl",
    "s3:PutLifecycleConfiguration",
    "*",
}


@pytest.fixture(scope="module")
def grants() -> dict[str, list[dict[str, Any]]]:
    expanded = expand(ROOT / "template.yaml")
    resolve = Resolver(STACK_NAME, REGION)
    roles = {**function_roles(expanded), "Job": "JobRole"}
    return {name: role_statements(expanded, role, resolve) for name, role in roles.items()}


def actions(statement: dict[str, Any]) -> list[str]:
    found = statement["Action"]
    return found if isinstance(found, list) else [found]


def granting(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in actions(s)]


def test_no_role_is_granted_what_no_code_calls(grants: dict[str, list[dict[str, Any]]]) -> None:
    for name, statements in grants.items():
        granted = {a for s in statements for a in actions(s)}
        assert not granted & NEVER, name


def test_only_the_webhook_deletes_items_its_delivery_claims(
    grants: dict[str, list[dict[str, Any]]],
) -> None:
    deleting = {
        n for n, ss in grants.items() if any("dynamodb:DeleteItem" in actions(s) for s in ss)
    }
    assert deleting == {"WebhookFunction"}


def test_jobs_are_stopped_only_when_tagged_as_distkpi_runs(
    grants: dict[str, list[dict[str, Any]]],
) -> None:
    terminating = [s for ss in grants.values() for s in granting(ss, "batch:TerminateJob")]
    assert len(terminating) == 2  # the webhook (superseded runs) and the sweeper (deadlines)
    for statement in terminating:
        assert statement["Condition"] == {"StringLike": {"aws:ResourceTag/distkpi:run": "*"}}


def test_listing_is_limited_to_the_prefixes_each_role_reads(
    grants: dict[str, list[dict[str, Any]]],
) -> None:
    prefixes = {
        name: [
            s["Condition"]["StringLike"]["s3:prefix"] for s in ss if "s3:ListBucket" in actions(s)
        ]
        for name, ss in grants.items()
    }
    assert prefixes == {
        "WebhookFunction": [["suites/*"]],
        "CollectorFunction": [["runs/*"]],
        "JobEventsFunction": [["runs/*"]],
        "SweeperFunction": [["runs/*"]],
        "Job": [["runs/*"]],
    }
