"""The history site on AWS: the sweeper rebuilds the pages of a configured branch's history
when a run of it finished since, into the bucket's site/ prefix; pull requests' are not."""

from __future__ import annotations

import copy

from tests.integration.conftest import BUCKET, Stack, event
from tests.integration.test_flow import deliver_all, run_all_nodes, sweep
from tests.integration.test_history import seed_history


def site_keys(stack: Stack) -> set[str]:
    listed = stack.s3.list_objects_v2(Bucket=BUCKET, Prefix="site/").get("Contents", [])
    return {o["Key"] for o in listed}


def test_the_sweeper_rebuilds_a_branch_history_once_per_new_run(stack: Stack) -> None:
    seed_history(stack, 3)
    (pr,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, pr), copies=1)
    payload = copy.deepcopy(event("push")["payload"])
    (push,) = stack.webhook("push", payload=payload)["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, push), copies=1)
    assert sweep(stack)["site_rebuilt"] == 1  # develop's; the pull request's is not published
    keys = site_keys(stack)
    page = "site/PaddlePaddle_Paddle-develop-resnet50.html"
    assert {"site/index.html", page} <= keys
    assert not any("pr_" in k for k in keys)
    index = stack.s3.get_object(Bucket=BUCKET, Key="site/index.html")["Body"].read().decode()
    assert 'href="PaddlePaddle_Paddle-develop-resnet50.html">resnet50<' in index
    assert "pr:" not in index and "pr_" not in index  # no pull request, nor a page never built
    assert sweep(stack)["site_rebuilt"] == 0  # nothing new since
