"""Parse where the data is, through the real handlers: the collector settles each config from
the summaries in its nodes' signed manifests and reads no log; an older image's manifests
(no summaries) have their logs parsed from S3, and the config's problems say so; job_events
never parses a log."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import BUCKET, Stack
from tests.integration.test_flow import (
    deliver_all,
    final_statuses,
    jobs_by_config,
    run_all_nodes,
)
from tests.integration.test_reliability import config_item

HEADLINE = "32 GPUs 20.0x, eff 0.62, TTA 240s, acc Δ0.0000: ok"
OLDER_IMAGE = (
    "no file summaries in the manifest (an older image?); their files were parsed from the "
    "run folder"
)


def delete_logs(stack: Stack, run_id: str) -> int:
    """Every log and GPU sample file of the run gone from the bucket (the tests may; no job
    or function can)."""
    listed = stack.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"runs/{run_id}/")
    logs = [obj["Key"] for obj in listed.get("Contents", []) if "/logs/" in obj["Key"]]
    for key in logs:
        stack.s3.delete_object(Bucket=BUCKET, Key=key)
    return len(logs)


def problems_of(stack: Stack, run_id: str, config: str) -> list[Any]:
    return list(config_item(stack, run_id, config)["kpis"]["problems"])


def test_the_collector_settles_every_config_from_the_summaries_and_reads_no_log(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    assert delete_logs(stack, run_id) == 2 * len(keys)  # a log and a GPU file per node
    deliver_all(stack, keys, copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "success" and final["description"].startswith(HEADLINE)
    for config in jobs_by_config(stack, run_id):
        assert problems_of(stack, run_id, config) == []


def test_an_older_images_manifests_are_parsed_from_s3_and_the_config_says_so(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id, summaries=False), copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "success" and final["description"].startswith(HEADLINE)
    assert problems_of(stack, run_id, "1x1") == [f"node(s) 0: {OLDER_IMAGE}"]
    nodes = ", ".join(str(n) for n in range(12))
    assert problems_of(stack, run_id, "4x8-8ps") == [f"node(s) {nodes}: {OLDER_IMAGE}"]


def test_job_events_settles_a_config_without_reading_its_logs(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    run_all_nodes(stack, run_id, summaries=False)
    # node 5 of 2x8-4ps never reports; its job succeeds all the same
    missing = f"runs/{run_id}/2x8-4ps/node-5.json"
    stack.s3.delete_object(Bucket=BUCKET, Key=missing)
    delete_logs(stack, run_id)
    assert stack.job_succeeded(jobs_by_config(stack, run_id)["2x8-4ps"])
    item = config_item(stack, run_id, "2x8-4ps")
    assert item["state"] == "incomplete"
    problems = item["kpis"]["problems"]
    assert problems[0] == "job succeeded but node(s) 5 never reported"
    assert (
        "node(s) 0, 1, 2, 3, 4: no file summaries in the manifest (an older image?); their "
        "files were not read: only the collector parses logs"
    ) in problems
    assert not any("missing" in p for p in problems)  # it never tried to read one
