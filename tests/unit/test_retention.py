"""Retention: the logs and traces a node uploads are tagged and expire after the stack's
LogRetentionDays by the bucket's lifecycle rule, which touches nothing else (manifests,
KPIs, reports, the site stay); a run's items get the table's TTL the same way, the history
none; the job may tag its uploads with that tag only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from distkpi.adapters.dynamo import DynamoTable, JobRepository, RunRepository
from distkpi.adapters.dynamo import keys as dynamo_keys
from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.layout import EXPIRES_KEY, EXPIRES_VALUE
from distkpi.domain.planning.jobs import run_spec_for
from distkpi.domain.planning.suites import load_suite
from distkpi.domain.records import JobRecord, RunRecord
from distkpi_cli.local.template import load_template, resources_of_type, table_definition

ROOT = Path(__file__).resolve().parents[2]
DAY_S = 24 * 3600
SUITE = load_suite(ROOT / "infra" / "suites" / "resnet50.yaml")
TRIGGER = Trigger("local/demo", "c" * 40, "refs/heads/develop", "develop", "push", "develop")


def make_run(run_id: str, created_at: str = "2026-11-02T10:00:00.000+00:00") -> RunRecord:
    return RunRecord(
        run_id=run_id,
        trigger=TRIGGER,
        model=SUITE.name,
        spec=run_spec_for(run_id, TRIGGER, SUITE),
        delivery="d",
        verdict_settings=SUITE.verdict,
        created_at=created_at,
        configs_total=1,
    )


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template((ROOT / "template.yaml").read_text())


def test_logs_and_traces_expire_by_their_tag_after_log_retention_days(
    template: dict[str, Any],
) -> None:
    parameter = template["Parameters"]["LogRetentionDays"]
    assert parameter["Default"] == 90
    bucket = resources_of_type(template, "AWS::S3::Bucket")["RunsBucket"]
    (rule,) = [r for r in bucket["LifecycleConfiguration"]["Rules"] if "TagFilters" in r]
    assert rule == {
        "Id": "logs-and-traces",
        "Status": "Enabled",
        "TagFilters": [{"Key": EXPIRES_KEY, "Value": EXPIRES_VALUE}],
        "ExpirationInDays": {"Ref": "LogRetentionDays"},
    }
    # no rule expires current objects by prefix: what is not tagged stays
    assert [r for r in bucket["LifecycleConfiguration"]["Rules"] if "ExpirationInDays" in r] == [
        rule
    ]


def test_run_items_expire_after_the_same_days_and_the_table_has_ttl_on(
    template: dict[str, Any],
) -> None:
    globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert globals_env["RETENTION_DAYS"] == {"Ref": "LogRetentionDays"}
    table = resources_of_type(template, "AWS::DynamoDB::Table")["RunsTable"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_the_job_may_tag_its_uploads_with_the_retention_tag_only(
    template: dict[str, Any],
) -> None:
    role = resources_of_type(template, "AWS::IAM::Role")["JobRole"]
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    (tagging,) = [s for s in statements if s["Action"] == "s3:PutObjectTagging"]
    assert tagging["Condition"] == {
        "StringEquals": {f"s3:RequestObjectTag/{EXPIRES_KEY}": EXPIRES_VALUE},
        "ForAllValues:StringEquals": {"s3:RequestObjectTagKeys": [EXPIRES_KEY]},
    }


@pytest.fixture
def aws(template: dict[str, Any]) -> Any:
    with mock_aws():
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            **table_definition(template, "RunsTable", "runs")
        )
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="bucket")
        yield


def test_a_runs_items_carry_its_expiry_and_a_history_none(aws: None) -> None:
    table = DynamoTable("runs", boto3.resource("dynamodb", region_name="us-east-1").Table("runs"))
    run = make_run("r1")
    assert RunRepository(table, retention_days=90).create(run, {"1x1": 1})
    created = 1793613600  # 2026-11-02T10:00:00Z
    item = table.get(dynamo_keys.run("r1"))
    config = table.get(dynamo_keys.config("r1", "1x1"))
    assert item is not None and config is not None
    assert item["expires_at"] == config["expires_at"] == created + 90 * DAY_S
    JobRepository(table, retention_days=90).record(JobRecord("j1", "r1", "1x1", {}))
    job = table.get(dynamo_keys.job("j1"))
    assert job is not None and job["expires_at"] > created + 90 * DAY_S
    kept = RunRepository(table)  # a stack without RETENTION_DAYS keeps them
    assert kept.create(make_run("r2"), {"1x1": 1})
    assert "expires_at" not in (table.get(dynamo_keys.run("r2")) or {})


def test_an_upload_that_expires_is_tagged_and_a_manifest_is_not(aws: None) -> None:
    import io

    s3 = boto3.client("s3", region_name="us-east-1")
    store = S3RunStore("bucket", s3)
    log = "runs/r1/1x1/logs/rank0.log"
    store.upload_stream(io.BytesIO(b"step 1 loss 2.0\n"), log, expires=True)
    store.put_bytes("runs/r1/1x1/node-0.json", b"{}")
    tags = s3.get_object_tagging(Bucket="bucket", Key=log)["TagSet"]
    assert tags == [{"Key": EXPIRES_KEY, "Value": EXPIRES_VALUE}]
    manifest = s3.get_object_tagging(Bucket="bucket", Key="runs/r1/1x1/node-0.json")
    assert manifest["TagSet"] == []
