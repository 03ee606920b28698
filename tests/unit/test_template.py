"""What template.yaml, expanded by SAM, grants each function and the benchmark job (the calls
the code makes and no more, and the conditions moto cannot check: the integration tests
enforce the actions and S3 resources), and the settings that keep the stack safe to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from distkpi_cli.local.aws_stack import REGION, STACK_NAME
from distkpi_cli.local.iam import Resolver, function_roles, role_statements
from distkpi_cli.local.sam import expand
from distkpi_cli.local.template import load_template, resources_of_type

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
    # a claim whose work raised is deleted: the webhook's on queuing, the launcher's on starting
    assert deleting == {"WebhookFunction", "LauncherFunction"}


def test_jobs_are_stopped_only_when_tagged_as_distkpi_runs(
    grants: dict[str, list[dict[str, Any]]],
) -> None:
    terminating = [s for ss in grants.values() for s in granting(ss, "batch:TerminateJob")]
    # the launcher (superseded runs) and the deadlines function (overdue runs)
    assert len(terminating) == 2
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
    # the fan-in reads the suites too: a run in doubt is confirmed by re-running its configs
    assert prefixes == {
        "WebhookFunction": [],
        "LauncherFunction": [["suites/*"]],
        "CollectorFunction": [["runs/*", "suites/*"]],
        "JobEventsFunction": [["runs/*", "suites/*"]],
        "SweeperFunction": [["runs/*", "suites/*"]],
        "DeadlinesFunction": [["runs/*", "suites/*"]],
        "Job": [["runs/*"]],
    }


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template((ROOT / "template.yaml").read_text())


def test_every_function_reserves_concurrency_and_the_webhook_answers_within_10_s(
    template: dict[str, Any],
) -> None:
    functions = resources_of_type(template, "AWS::Serverless::Function")
    assert all("ReservedConcurrentExecutions" in f for f in functions.values())
    webhook = functions["WebhookFunction"]
    assert webhook["Timeout"] < 10
    # it calls no GitHub and submits no job: the launcher behind its queue does
    assert not {"GITHUB_BUDGET_S", "JOB_QUEUE"} & set(webhook["Environment"]["Variables"])


def test_the_launchers_together_submit_under_batchs_50_a_second(template: dict[str, Any]) -> None:
    functions = resources_of_type(template, "AWS::Serverless::Function")
    launcher = functions["LauncherFunction"]
    rate = float(launcher["Environment"]["Variables"]["SUBMIT_JOBS_PER_S"])
    concurrency = launcher["ReservedConcurrentExecutions"]
    events = launcher["Events"]["Deliveries"]["Properties"]
    assert events["ScalingConfig"]["MaximumConcurrency"] <= concurrency
    assert events["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # the fan-in's follow-ups (confirmations, bisection steps) get what is left
    assert concurrency * rate <= 40


def test_a_delivery_the_launcher_fails_on_ends_in_a_dead_letter_queue(
    template: dict[str, Any],
) -> None:
    queues = resources_of_type(template, "AWS::SQS::Queue")
    deliveries = queues["DeliveryQueue"]
    assert deliveries["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["DeliveryDeadLetterQueue", "Arn"]
    }
    launcher = resources_of_type(template, "AWS::Serverless::Function")["LauncherFunction"]
    # a launcher killed midway is given its delivery again only after its claim is over
    assert deliveries["VisibilityTimeout"] >= 6 * launcher["Timeout"]


def test_the_job_queue_shares_its_capacity_among_repositories(template: dict[str, Any]) -> None:
    (queue,) = resources_of_type(template, "AWS::Batch::JobQueue").values()
    assert queue["SchedulingPolicyArn"] == {"Ref": "SchedulingPolicy"}
    (policy,) = resources_of_type(template, "AWS::Batch::SchedulingPolicy").values()
    assert "ShareDecaySeconds" in policy["FairsharePolicy"]
    assert template["Globals"]["Function"]["Environment"]["Variables"]["FAIR_SHARE"] == "true"


def test_containers_cannot_reach_the_instance_role(template: dict[str, Any]) -> None:
    (launch,) = resources_of_type(template, "AWS::EC2::LaunchTemplate").values()
    options = launch["LaunchTemplateData"]["MetadataOptions"]
    assert options["HttpTokens"] == "required" and options["HttpPutResponseHopLimit"] == 1
    (environment,) = resources_of_type(template, "AWS::Batch::ComputeEnvironment").values()
    assert "LaunchTemplate" in environment["ComputeResources"]


def test_the_bucket_refuses_plain_http_and_expires_old_versions(template: dict[str, Any]) -> None:
    (policy,) = resources_of_type(template, "AWS::S3::BucketPolicy").values()
    deny, site = policy["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert site["Fn::If"][0] == "HostsSite" and site["Fn::If"][2] == {"Ref": "AWS::NoValue"}
    rules = resources_of_type(template, "AWS::S3::Bucket")["RunsBucket"]["LifecycleConfiguration"][
        "Rules"
    ]
    by_id = {r["Id"]: r for r in rules}
    assert by_id["old-versions-and-unfinished-uploads"]["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": 30
    }
    # the site's files are rewritten by every run: their old versions last a day
    assert by_id["site-old-versions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 1}
    assert by_id["site-old-versions"]["Prefix"] == "site/"
    assert resources_of_type(template, "AWS::DynamoDB::Table")["RunsTable"][
        "DeletionProtectionEnabled"
    ]


def test_the_site_is_served_through_cloudfront_only_when_asked_and_the_bucket_stays_private(
    template: dict[str, Any],
) -> None:
    assert template["Parameters"]["HostSite"]["Default"] == "false"
    assert template["Conditions"]["HostsSite"] == {"Fn::Equals": [{"Ref": "HostSite"}, "true"]}
    resources = template["Resources"]
    for name in ("SiteOriginAccessControl", "SiteDistribution"):
        assert resources[name]["Condition"] == "HostsSite"
    access = resources["SiteOriginAccessControl"]["Properties"]
    assert access["OriginAccessControlConfig"]["SigningBehavior"] == "always"
    config = resources["SiteDistribution"]["Properties"]["DistributionConfig"]
    (origin,) = config["Origins"]
    assert origin["OriginPath"] == "/site"
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": ["SiteOriginAccessControl", "Id"]}
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}
    assert config["DefaultCacheBehavior"]["ViewerProtocolPolicy"] == "redirect-to-https"
    assert [b["PathPattern"] for b in config["CacheBehaviors"]] == ["api/*"]
    (policy,) = resources_of_type(template, "AWS::S3::BucketPolicy").values()
    allowed = policy["PolicyDocument"]["Statement"][1]["Fn::If"][1]
    assert allowed["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert allowed["Action"] == "s3:GetObject"
    assert allowed["Resource"] == {"Fn::Sub": "${RunsBucket.Arn}/site/*"}
    assert "AWS:SourceArn" in allowed["Condition"]["StringEquals"]
    block = resources_of_type(template, "AWS::S3::Bucket")["RunsBucket"][
        "PublicAccessBlockConfiguration"
    ]
    assert all(block.values())


def test_alarms_watch_the_dead_letter_queue_and_the_failure_metrics(
    template: dict[str, Any],
) -> None:
    alarms = resources_of_type(template, "AWS::CloudWatch::Alarm").values()
    watched = {a["MetricName"] for a in alarms}
    assert watched == {
        "ApproximateNumberOfMessagesVisible",
        "SweepFailures",
        "StatusPostFailures",
        "ReportFailures",
    }
    assert all(a["AlarmActions"] == [{"Ref": "AlarmTopic"}] for a in alarms)
