"""Parse where the data is, through the real handlers: the collector settles each config from
the summaries in its nodes' signed manifests and reads no log; an older image's manifests
(no summaries) have their logs parsed from S3, and the config's problems say so; job_events
never parses a log."""

from __future__ import annotations

import json
from typing import Any

from distkpi.domain.planning.jobenv import PARSE_SETTINGS
from tests.conftest import trainer_log
from tests.integration.conftest import BUCKET, SUITES, Stack
from tests.integration.test_flow import (
    THROUGHPUT,
    deliver_all,
    final_statuses,
    job_variable,
    jobs_by_config,
    run_all_nodes,
    upload_node,
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


def declare_patterns(stack: Stack) -> None:
    """resnet50's suite reading its throughput with a pattern of its own (`metrics:`)."""
    suite = (SUITES[0].read_text()).replace(
        "configs:\n",
        "metrics:\n"
        "  throughput: {pattern: '\"throughput\": (?P<value>[0-9.]+)', per: process}\n"
        "configs:\n",
        1,
    )
    assert "metrics:" in suite
    stack.s3.put_object(Bucket=BUCKET, Key="suites/resnet50.yaml", Body=suite.encode())


def test_a_suite_with_patterns_of_its_own_is_settled_from_the_summaries_too(
    stack: Stack,
) -> None:
    """The launcher hands the suite's patterns to its nodes (DISTKPI_PARSE_SETTINGS), which
    summarise with them and say so in the signed manifest: the collector reads no log."""
    declare_patterns(stack)
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    variable = job_variable(stack, run_id, "1x1", PARSE_SETTINGS)
    assert (
        variable is not None and json.loads(variable)["metrics"]["throughput"]["per"] == "process"
    )
    keys = run_all_nodes(stack, run_id)
    assert delete_logs(stack, run_id) == 2 * len(keys)
    deliver_all(stack, keys, copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "success" and final["description"].startswith(HEADLINE)
    for config in jobs_by_config(stack, run_id):
        assert problems_of(stack, run_id, config) == []


def test_an_older_image_of_a_suite_with_patterns_has_its_logs_read_from_s3(
    stack: Stack,
) -> None:
    """Manifests naming no parse settings (an image older than DISTKPI_PARSE_SETTINGS):
    their default summaries do not stand for the suite's patterns, so the collector reads
    the logs, here gone from the bucket."""
    declare_patterns(stack)
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    spec = json.loads(
        stack.s3.get_object(Bucket=BUCKET, Key=f"runs/{run_id}/run.json")["Body"].read()
    )
    keys = []
    for cfg in spec["configs"]:
        for node in range(cfg["nodes"]):
            trainer = node < cfg["trainers"]
            role, rank = ("trainer", node) if trainer else ("pserver", node - cfg["trainers"])
            log = trainer_log(THROUGHPUT[cfg["name"]] / cfg["trainers"]) if trainer else "serving\n"
            keys.append(upload_node(stack, run_id, cfg["name"], node, role, rank, log))
    delete_logs(stack, run_id)
    deliver_all(stack, keys, copies=1)
    assert any("missing" in p for p in problems_of(stack, run_id, "1x1"))


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
