"""GitHub's limits through the real handlers on moto and the GitHub stand-in: what one
push's run asks of GitHub as an App (two content-creating requests: its check run created,
then completed), one installation token for every function's containers (kept in the
table), conditional reads answered 304, each throttling answer of the stand-in waited out
and the request sent again, and the paced writer's slots shared through the table."""

from __future__ import annotations

import time
from typing import Any

from distkpi.adapters.dynamo import DynamoTable
from distkpi.adapters.dynamo.github_app import AppTokenRepository
from distkpi.adapters.dynamo.keys import pace
from distkpi.adapters.dynamo.pacing import PaceSlots
from distkpi.adapters.github import GitHubStatusClient
from distkpi.adapters.github_app import AppAuth, AppCredentials
from distkpi.domain.commit_status import CommitStatus
from distkpi_cli.local.aws_stack import TABLE
from distkpi_cli.local.github_standin import GitHubStandIn
from tests.integration.conftest import GITHUB_TOKEN, Stack, event
from tests.integration.test_flow import deliver_all, jobs_by_config, run_all_nodes
from tests.integration.test_github_app import checks_named, with_installation
from tests.integration.test_history import seed_history

REPO = "PaddlePaddle/Paddle"
STATUS = CommitStatus(REPO, "a" * 40, "success", "distkpi/resnet50", "ok")


def push(stack: Stack) -> str:
    response = stack.webhook("push", payload=with_installation(event("push")["payload"]))
    assert response["statusCode"] == 201, response
    (run_id,) = response["json"]["runs"]
    return run_id


def test_a_push_as_an_app_makes_two_content_creating_requests_and_one_token(
    app_stack: Stack,
) -> None:
    seed_history(app_stack, 12)
    run_id = push(app_stack)
    deliver_all(app_stack, run_all_nodes(app_stack, run_id), copies=1)
    (check,) = checks_named(app_stack)
    assert check["status"] == "completed" and check["external_id"] == run_id
    github = app_stack.github
    writes = {"POST", "PATCH", "PUT", "DELETE"}
    content = [
        r for r in github.requested if r.split()[0] in writes and not r.endswith("/access_tokens")
    ]
    assert content == [
        f"POST /repos/{REPO}/check-runs",  # queued, when the run starts
        f"PATCH /repos/{REPO}/check-runs/{check['id']}",  # completed, with its verdict
    ]
    assert github.kinds["content"] == 2
    # the webhook's token served the collector's containers too: one exchange, no lookup
    assert github.kinds["token"] == 1
    assert app_stack.github.app is not None and app_stack.github.app.issued == 1
    assert not [r for r in github.requested if r.endswith("/installation")]
    assert not [r for r in github.requested if r.startswith("GET") and "check-runs" in r]


def test_the_installation_token_is_kept_for_other_containers_until_it_nears_expiry(
    app_stack: Stack,
) -> None:
    app = app_stack.github.app
    assert app is not None
    now = [app.clock()]
    app.clock = lambda: now[0]  # GitHub's clock and ours, moved on together
    store = AppTokenRepository(DynamoTable(TABLE))

    def container() -> AppAuth:
        auth = AppAuth(
            app_stack.github.url, lambda: AppCredentials.from_secret(app.secret()), store=store
        )
        auth.clock = lambda: now[0]
        return auth

    first = container().token_for(REPO)  # a miss: the installation asked, a token issued
    assert app.issued == 1
    assert container().token_for(REPO) == first  # a hit, in another container
    assert app.issued == 1
    lookups = [r for r in app_stack.github.requested if r.endswith("/installation")]
    assert len(lookups) == 1
    now[0] += 3600 - 240  # four minutes left, under five: renewed, and kept for the others
    renewed = container().token_for(REPO)
    assert renewed != first and app.issued == 2
    assert container().token_for(REPO) == renewed and app.issued == 2


def client(github: GitHubStandIn, **kwargs: Any) -> GitHubStatusClient:
    return GitHubStatusClient(github.url, lambda repo: GITHUB_TOKEN, backoff_s=0, **kwargs)


def test_a_read_that_repeats_is_answered_304_with_the_answer_kept(stack: Stack) -> None:
    stack.github.changed_files = ["python/paddle/nn/layer.py", "README.md"]
    github = client(stack.github)
    first = github.compare(REPO, "a" * 40, "c" * 40)
    again = github.compare(REPO, "a" * 40, "c" * 40)
    assert again == first and first.files == ["python/paddle/nn/layer.py", "README.md"]
    assert stack.github.kinds["read"] == 1
    assert stack.github.kinds["not_modified"] == 1
    stack.github.changed_files = ["setup.py"]  # changed: a full answer again
    assert github.compare(REPO, "a" * 40, "c" * 40).files == ["setup.py"]
    assert stack.github.kinds["read"] == 2


def test_each_throttling_answer_of_the_standin_is_waited_out_then_sent_again(
    stack: Stack,
) -> None:
    slept: list[float] = []
    github = client(stack.github, sleep=slept.append)
    stack.github.throttle_next(403, retry_after=2)
    stack.github.throttle_next(429, retry_after=1)
    stack.github.throttle_next(403, reset_in=3600)
    github.max_wait_s = 7200
    github.post(STATUS)
    assert len(slept) == 3 and slept[:2] == [2.0, 1.0] and 3500 < slept[2] <= 3600
    assert stack.github.kinds["scripted"] == 3 and stack.github.kinds["content"] == 1
    assert [s["state"] for s in stack.github.statuses] == ["success"]


def test_writers_in_every_container_share_one_installations_slots(stack: Stack) -> None:
    slots = [PaceSlots(DynamoTable(TABLE)) for _ in range(2)]  # two containers
    now = 1_790_000_000.0
    claimed = [slots[n % 2].claim("installation-1", now, 1.0) for n in range(4)]
    assert claimed == [now, now + 1, now + 2, now + 3]
    assert slots[0].claim("installation-2", now, 1.0) == now
    later = now + 60  # idle since: the next write's slot is now again
    assert slots[1].claim("installation-1", later, 1.0) == later


def test_a_turn_taken_only_if_it_is_now_is_shared_and_claims_nothing_when_refused(
    stack: Stack,
) -> None:
    slots = [PaceSlots(DynamoTable(TABLE)) for _ in range(2)]
    now = 1_790_000_000.0
    latest = now + 2  # a burst of three a second
    taken = [slots[n % 2].claim_by("installation-1", now, 1.0, latest) for n in range(5)]
    assert taken == [True, True, True, False, False]
    assert slots[0].claim("installation-1", now, 1.0) == now + 3  # nothing claimed since
    assert slots[1].claim_by("installation-2", now, 1.0, latest)
    assert slots[0].claim_by("installation-1", now + 60, 1.0, now + 62)  # idle: now again


def test_a_push_whose_writer_is_spent_submits_its_jobs_and_leaves_the_queued_check_out(
    app_stack: Stack,
) -> None:
    seed_history(app_stack, 12)
    table, now = DynamoTable(TABLE), time.time()
    minute = "installation-58120731#0"
    for _ in range(75):  # other runs took the minute's turns: the next is a minute away
        PaceSlots(table).claim(minute, now, 1.0)
    run_id = push(app_stack)
    assert checks_named(app_stack) == []  # `queued` left out: it would have waited
    assert len(jobs_by_config(app_stack, run_id)) == 4  # the jobs did not wait for it
    table.delete(pace(minute))  # the minute has passed by the time the nodes are done
    deliver_all(app_stack, run_all_nodes(app_stack, run_id), copies=1)
    (check,) = checks_named(app_stack)  # the verdict's check run, created on its own
    assert check["status"] == "completed" and check["external_id"] == run_id
    assert app_stack.github.kinds["content"] == 1
