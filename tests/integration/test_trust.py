"""Who may start runs: a fork's pull request by an outsider waits for a maintainer's label,
the approval holds for one head only, members run at once, drafts wait to be ready."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from boto3.dynamodb.conditions import Key

from distkpi.adapters.batch import WITHHELD_KEY
from distkpi.entry import wiring
from tests.integration.conftest import BUCKET, ROOT, Stack, event
from tests.integration.test_flow import (
    THROUGHPUT,
    config_key_of,
    deliver_all,
    final_statuses,
    jobs_by_config,
    run_all_nodes,
    trainer_log,
    upload_node,
)
from tests.integration.test_reliability import config_item

FORK = "someone/Paddle"
APPROVAL = "needs approval: a maintainer adds the label ok-to-test"


def pull_request(
    action: str = "opened",
    *,
    association: str = "NONE",
    head_repo: str = FORK,
    sha: str = "a" * 40,
    labels: tuple[str, ...] = (),
    draft: bool = False,
    label: str | None = None,
) -> dict[str, Any]:
    """The recorded pull_request delivery, as GitHub sends it for a fork's pull request."""
    payload = copy.deepcopy(event("pull_request")["payload"])
    pr = payload["pull_request"]
    payload["action"] = action
    pr["head"]["sha"] = sha
    pr["head"]["repo"]["full_name"] = head_repo
    pr["author_association"] = association
    pr["draft"] = draft
    pr["labels"] = [{"id": i, "name": name, "color": "ededed"} for i, name in enumerate(labels)]
    if label is not None:
        payload["label"] = {"id": 99, "name": label, "color": "0e8a16"}
    return payload


def deliver(stack: Stack, payload: dict[str, Any], delivery: str) -> dict[str, Any]:
    return stack.webhook("pull_request", payload=payload, delivery=delivery)


def test_an_outsiders_fork_waits_for_the_label_and_each_push_needs_it_again(stack: Stack) -> None:
    # a fork's pull request from an author GitHub calls NONE starts nothing
    opened = deliver(stack, pull_request("opened"), "d1")
    assert opened["statusCode"] == 202 and opened["json"]["suites"] == ["resnet50"]
    assert stack.jobs() == []
    assert [(s["sha"], s["state"], s["description"]) for s in stack.github.statuses] == [
        ("a" * 40, "pending", APPROVAL)
    ]
    # another label does nothing; the approval label starts the runs for the head
    other = deliver(stack, pull_request("labeled", label="bug", labels=("bug",)), "d2")
    assert other["statusCode"] == 202 and stack.jobs() == []
    approved = deliver(
        stack, pull_request("labeled", label="ok-to-test", labels=("ok-to-test",)), "d3"
    )
    assert approved["statusCode"] == 201
    (run,) = approved["json"]["runs"]
    assert len(stack.jobs()) == 4 and all(run in j["jobName"] for j in stack.jobs())
    # a later push by the same author needs approval again: the stale label comes off
    pushed = pull_request("synchronize", sha="b" * 40, labels=("ok-to-test",))
    again = deliver(stack, pushed, "d4")
    assert again["statusCode"] == 202 and len(stack.jobs()) == 4
    assert stack.github.removed_labels == [
        {"repo": "PaddlePaddle/Paddle", "number": 12091, "label": "ok-to-test"}
    ]
    assert (stack.github.statuses[-1]["sha"], stack.github.statuses[-1]["description"]) == (
        "b" * 40,
        APPROVAL,
    )


def test_members_and_the_base_repository_run_at_once(stack: Stack) -> None:
    member = deliver(stack, pull_request("opened", association="MEMBER"), "m1")
    assert member["statusCode"] == 201 and len(member["json"]["runs"]) == 1
    own = pull_request("opened", head_repo="PaddlePaddle/Paddle", sha="c" * 40)
    assert deliver(stack, own, "m2")["statusCode"] == 201
    # the approval label on a trusted pull request starts nothing more
    labeled = pull_request("labeled", association="MEMBER", label="ok-to-test")
    assert deliver(stack, labeled, "m3")["statusCode"] == 202
    assert len(stack.jobs()) == 8 and stack.github.removed_labels == []


def test_a_draft_starts_nothing_until_it_is_ready_for_review(stack: Stack) -> None:
    draft = deliver(stack, pull_request("opened", association="MEMBER", draft=True), "r1")
    assert draft["statusCode"] == 202 and "draft" in draft["json"]["message"]
    assert stack.jobs() == [] and stack.github.statuses == []
    ready = deliver(stack, pull_request("ready_for_review", association="MEMBER"), "r2")
    assert ready["statusCode"] == 201 and len(stack.jobs()) == 4


def test_a_log_overwritten_after_its_manifest_ends_the_run_in_error_naming_it(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request", delivery="t1")["json"]["runs"]
    # an older image's nodes: no summaries, so the collector reads (and checks) every log
    keys = run_all_nodes(stack, run_id, summaries=False)
    # another job (any job may write under runs/) rewrites a finished node's log, 3x faster
    forged = trainer_log(THROUGHPUT["4x8-8ps"] * 3 / 4)
    path = f"runs/{run_id}/4x8-8ps/logs/trainer-0.log"
    stack.job_s3.put_object(Bucket=BUCKET, Key=path, Body=forged)
    deliver_all(stack, keys, copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "error" and final["description"].startswith("4x8-8ps failed")
    config = config_item(stack, run_id, "4x8-8ps")
    assert config["kpis"]["throughput"] is None
    assert (
        "node 0: logs/trainer-0.log changed after upload: its sha256 is not the manifest's"
        in config["kpis"]["problems"]
    )


def test_a_manifest_signed_with_another_configs_key_fails_that_config(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request", delivery="t2")["json"]["runs"]
    keys = [k for k in run_all_nodes(stack, run_id) if "/1x1/" not in k]
    other_key = config_key_of(stack, run_id, "1x8")
    log = trainer_log(THROUGHPUT["1x1"])
    keys.append(upload_node(stack, run_id, "1x1", 0, "trainer", 0, log, key=other_key))
    deliver_all(stack, keys, copies=1)
    assert final_statuses(stack) == []  # the forged manifest does not count its node
    stack.job_succeeded(jobs_by_config(stack, run_id)["1x1"])  # the job ends: settled
    (final,) = final_statuses(stack)
    assert final["state"] == "error" and final["description"].startswith("1x1 failed")
    problems = config_item(stack, run_id, "1x1")["kpis"]["problems"]
    assert "node 0: 1x1/node-0.json is not signed with this config's key (forged?)" in problems
    assert config_item(stack, run_id, "1x8")["state"] == "ok"


def test_an_unsigned_node_file_does_not_count_and_the_nodes_own_manifest_does(
    stack: Stack,
) -> None:
    # another job drops an unsigned node-0.json into this run's 1x1 before its node reports
    (run_id,) = stack.webhook("pull_request", delivery="t3")["json"]["runs"]
    stray = {"schema": 1, "node": 0, "exit_code": 0, "files": []}
    stray |= {"started_at": "2026-11-30T03:00:00Z", "finished_at": "2026-11-30T03:00:01Z"}
    stray_key = f"runs/{run_id}/1x1/node-0.json"
    stack.job_s3.put_object(Bucket=BUCKET, Key=stray_key, Body=json.dumps(stray))
    stack.collect(stray_key)
    assert config_item(stack, run_id, "1x1").get("nodes_reported", set()) == set()
    # the genuine manifest replaces it and counts, and the run is judged as usual
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    assert config_item(stack, run_id, "1x1")["state"] == "ok"
    (final,) = final_statuses(stack)
    assert final["state"] == "success"


def test_a_manifest_of_another_node_copied_to_a_nodes_place_does_not_count(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request", delivery="t4")["json"]["runs"]
    keys = [k for k in run_all_nodes(stack, run_id) if "/2x8-4ps/node-1.json" not in k]
    node_0 = f"runs/{run_id}/2x8-4ps/node-0.json"
    copied = stack.s3.get_object(Bucket=BUCKET, Key=node_0)["Body"].read()
    node_1 = f"runs/{run_id}/2x8-4ps/node-1.json"
    stack.job_s3.put_object(Bucket=BUCKET, Key=node_1, Body=copied)
    deliver_all(stack, [*keys, node_1], copies=1)
    assert config_item(stack, run_id, "2x8-4ps")["nodes_reported"] == {0, 2, 3, 4, 5}
    stack.job_succeeded(jobs_by_config(stack, run_id)["2x8-4ps"])
    problems = config_item(stack, run_id, "2x8-4ps")["kpis"]["problems"]
    assert "node 1: 2x8-4ps/node-1.json says it is node 0" in problems


def suite_with_paths(stack: Stack, *paths: str) -> None:
    suite = yaml.safe_load((ROOT / "infra" / "suites" / "resnet50.yaml").read_text())
    suite["paths"] = list(paths)
    stack.s3.put_object(Bucket=BUCKET, Key="suites/resnet50.yaml", Body=yaml.safe_dump(suite))


def test_a_change_under_none_of_a_suites_paths_is_skipped_with_success(stack: Stack) -> None:
    suite_with_paths(stack, "paddle/fluid/distributed/**", "python/paddle/distributed/*.py")
    # a push that changes only the docs starts nothing and passes the required check
    stack.github.changed_files = ["README.md", "doc/fluid/howto.md"]
    skipped = stack.webhook("push", delivery="p1")
    assert skipped["statusCode"] == 201 and skipped["json"]["runs"] == []
    assert stack.jobs() == []
    (status,) = stack.github.statuses
    assert status["state"] == "success"
    assert status["description"] == (
        "skipped: no change under paddle/fluid/distributed/**, python/paddle/distributed/*.py"
    )
    # one that touches a path runs
    stack.github.changed_files = ["README.md", "paddle/fluid/distributed/ps/service/server.cc"]
    assert len(stack.webhook("push", delivery="p2")["json"]["runs"]) == 1
    # and one that moves a watched file out from under the paths (GitHub's compare names
    # the old path only as the rename's previous_filename)
    stack.github.changed_files = ["doc/fluid/howto.md", "tools/server.cc"]
    stack.github.renamed_from = {"tools/server.cc": "paddle/fluid/distributed/server.cc"}
    assert len(stack.webhook("push", delivery="p4")["json"]["runs"]) == 1
    stack.github.renamed_from = {}
    # and so does one whose files GitHub cannot list in full (its cap is 300)
    stack.github.changed_files = [f"doc/page{i}.md" for i in range(400)]
    assert len(stack.webhook("push", delivery="p3")["json"]["runs"]) == 1


# -- which repositories may start runs at all: the stack's list, deny by default ----------


def from_repository(name: str, repo: str) -> dict[str, Any]:
    payload = copy.deepcopy(event(name)["payload"])
    payload["repository"]["full_name"] = repo
    payload["repository"]["name"] = repo.split("/")[1]
    return payload


def test_a_repository_the_stack_does_not_list_starts_nothing(stack: Stack) -> None:
    """A signed push to develop of a stranger's copy (anyone can add the webhook, or
    install a public App, on a repository of theirs) used to start four GPU jobs."""
    for name in ("push", "pull_request"):
        response = stack.webhook(name, payload=from_repository(name, "stranger/Paddle"))
        assert response["statusCode"] == 202, response
        assert response["json"]["message"] == (
            "ignored: repository stranger/Paddle is not allowed to start runs on this stack"
        )
    assert stack.jobs() == [] and stack.github.statuses == []
    # the listed one runs, whatever the case GitHub spells it in
    listed = stack.webhook("push", payload=from_repository("push", "paddlepaddle/paddle"))
    assert listed["statusCode"] == 201 and len(listed["json"]["runs"]) == 1


def test_with_no_list_no_repository_starts_runs(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLOWED_REPOSITORIES", "")
    wiring.reset()
    response = stack.webhook("push")
    assert response["statusCode"] == 202 and response["json"]["message"] == (
        "ignored: repository PaddlePaddle/Paddle: this stack allows no repository to start runs"
    )
    assert stack.jobs() == []


def test_an_allowed_installation_lets_its_repositories_run(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLOWED_REPOSITORIES", "")
    monkeypatch.setenv("ALLOWED_INSTALLATIONS", "58120731,7")
    wiring.reset()
    ours = {**from_repository("push", "PaddlePaddle/Paddle"), "installation": {"id": 58120731}}
    theirs = {**from_repository("push", "stranger/Paddle"), "installation": {"id": 99}}
    assert stack.webhook("push", payload=ours, delivery="i1")["statusCode"] == 201
    assert stack.webhook("push", payload=theirs, delivery="i2")["statusCode"] == 202
    assert len(stack.jobs()) == 4


def test_no_manifest_key_is_stored_and_each_job_is_given_its_configs_own(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request", delivery="t5")["json"]["runs"]
    items = stack.table.query(KeyConditionExpression=Key("PK").eq(f"RUN#{run_id}"))["Items"]
    assert len(items) == 5 and not any("manifest_key" in item for item in items)
    submitted = {j["jobId"]: j for j in stack.jobs()}
    for config, job_id in jobs_by_config(stack, run_id).items():
        key = config_key_of(stack, run_id, config)
        stored = stack.table.get_item(Key={"PK": f"JOB#{job_id}", "SK": "JOB"})["Item"]
        assert key not in json.dumps(stored, default=str)
        assert WITHHELD_KEY in json.dumps(stored["request"], default=str)
        shown = json.dumps(submitted[job_id], default=str)  # what DescribeJobs shows
        assert not any(
            config_key_of(stack, run_id, c) in shown for c in ("1x1", "1x8") if c != config
        )
