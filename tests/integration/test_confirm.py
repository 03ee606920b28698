"""Confirm by re-running: a first run in doubt re-runs only the configs concerned, at the same
sha, and the final status comes once, after them; a conclusive first run re-runs nothing."""

from __future__ import annotations

from typing import Any

import yaml
from boto3.dynamodb.conditions import Key

from tests.integration.conftest import BUCKET, ROOT, Stack
from tests.integration.test_flow import deliver_all, final_statuses, pushed, run_all_nodes
from tests.integration.test_history import REPO, seed_history


def confirming_suite(stack: Stack, max_runs: int = 3) -> None:
    """The bundled resnet50 suite, deployed with `confirm`."""
    suite = yaml.safe_load((ROOT / "infra" / "suites" / "resnet50.yaml").read_text())
    suite["verdict"]["confirm"] = {"screen": 0.8, "max_runs": max_runs}
    stack.s3.put_object(Bucket=BUCKET, Key="suites/resnet50.yaml", Body=yaml.safe_dump(suite))


def run_item(stack: Stack, run_id: str) -> dict[str, Any]:
    return stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"}).get("Item", {})  # type: ignore[no-any-return]


def history_rows(stack: Stack, sha: str) -> list[dict[str, Any]]:
    partition = Key("PK").eq(f"HIST#{REPO}#develop#resnet50")
    found = stack.table.query(KeyConditionExpression=partition)["Items"]
    return [item for item in found if item.get("sha") == sha]


def test_a_borderline_first_run_re_runs_only_that_config(stack: Stack) -> None:
    # Given 30 develop runs with 1% noise, and a suite that confirms
    seed_history(stack, 30)
    confirming_suite(stack)
    # When a push's first run is 2.7% slower on the largest config (in doubt, not conclusive)
    (first,) = stack.webhook("push")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, first, scale={"4x8-8ps": 0.973}), copies=1)
    # Then no verdict yet: only that config runs again, at the same sha, and the status says so
    assert final_statuses(stack) == []
    second = f"{first}-r2"
    assert run_item(stack, first)["status"] == "confirming"
    assert run_item(stack, first)["confirmed_by"] == second
    rerun = run_item(stack, second)
    assert rerun["sha"] == run_item(stack, first)["sha"] and rerun["confirms"] == first
    assert [c["name"] for c in rerun["spec"]["configs"]] == ["4x8-8ps"]
    jobs = [j for j in stack.jobs() if second in j["jobName"]]
    assert [j["jobName"] for j in jobs] == [f"distkpi-{second}-4x8-8ps"]
    assert stack.github.statuses[-1]["state"] == "pending"
    assert stack.github.statuses[-1]["description"] == "confirming 4x8-8ps: run 2 of up to 3"
    # When the re-run comes in at the usual speed
    deliver_all(stack, run_all_nodes(stack, second), copies=2)
    # Then the final status comes once, judged on both runs together
    (final,) = final_statuses(stack)
    assert final["state"] == "success"
    judged = {(j["config"], j["kpi"]): j for j in run_item(stack, second)["result"]["judgements"]}
    assert judged[("4x8-8ps", "throughput")]["runs"] == 2
    assert judged[("1x1", "throughput")]["runs"] == 1
    # and the history keeps one row per config for the commit, with the mean and k
    rows = history_rows(stack, rerun["sha"])
    assert sorted(r["config"] for r in rows) == ["1x1", "1x8", "2x8-4ps", "4x8-8ps"]
    largest = next(r for r in rows if r["config"] == "4x8-8ps")
    assert largest["kpis"]["runs"] == 2
    assert {r["run_id"] for r in rows} == {second}


def test_a_conclusive_first_run_re_runs_nothing(stack: Stack) -> None:
    seed_history(stack, 30)
    confirming_suite(stack)
    # an unchanged commit passes at once
    (clean,) = stack.webhook("push")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, clean), copies=1)
    assert [s["state"] for s in final_statuses(stack)] == ["success"]
    # and a 25% drop fails at once
    (slow,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, slow, scale={"4x8-8ps": 0.75}), copies=1)
    assert [s["state"] for s in final_statuses(stack)] == ["success", "failure"]
    assert not any("-r2" in j["jobName"] for j in stack.jobs())
    assert run_item(stack, f"{clean}-r2") == {} and run_item(stack, f"{slow}-r2") == {}


def test_a_new_push_while_confirming_stops_the_re_runs(stack: Stack) -> None:
    # Given a pull request's first run in doubt, confirming on 4x8-8ps
    seed_history(stack, 30)
    confirming_suite(stack)
    (first,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, first, scale={"4x8-8ps": 0.973}), copies=1)
    second = f"{first}-r2"
    assert run_item(stack, first)["status"] == "confirming"
    # When a newer push to the pull request arrives
    newer = "e" * 40
    stack.webhook("pull_request", payload=pushed(newer), delivery="second-delivery")
    # Then the first run and its re-run are both cancelled, and the re-run's job is stopped
    reason = f"cancelled: superseded by {newer[:10]}"
    assert run_item(stack, first)["status"] == "cancelled"
    assert run_item(stack, second)["status"] == "cancelled"
    reasons = {j["jobName"]: j.get("statusReason") for j in stack.jobs()}
    assert reasons[f"distkpi-{second}-4x8-8ps"] == reason
    # and the re-run's late results publish nothing for the old commit
    deliver_all(stack, run_all_nodes(stack, second), copies=1)
    old = [s for s in final_statuses(stack) if s["sha"] != newer]
    assert old and all((s["state"], s["description"]) == ("error", reason) for s in old)
