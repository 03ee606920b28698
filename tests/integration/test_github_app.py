"""distkpi as a GitHub App: installation tokens from a signed JWT, one check run per suite
carrying the KPI table, re-runs from the "Re-run" button, and nothing secret in any log."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest

from distkpi.adapters.dynamo import keys as dynamo_keys
from distkpi.adapters.github_app import AppAuth, AppCredentials
from distkpi.entry import wiring
from distkpi.exceptions import GitHubAuthError
from distkpi_cli.local.github_standin import GitHubApp, GitHubStandIn
from tests.integration.conftest import Stack, event
from tests.integration.test_flow import deliver_all, run_all_nodes, sweep
from tests.integration.test_history import seed_history
from tests.integration.test_trust import pull_request

APP_ID = "904512"


def with_installation(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "installation": {"id": 58120731}}


def open_pull_request(stack: Stack, delivery: str = "d-open") -> str:
    payload = with_installation(event("pull_request")["payload"])
    response = stack.webhook("pull_request", payload=payload, delivery=delivery)
    assert response["statusCode"] == 201, response
    (run_id,) = response["json"]["runs"]
    return run_id


def checks_named(stack: Stack, name: str = "distkpi/resnet50") -> list[dict[str, Any]]:
    return [c for c in stack.github.checks if c["name"] == name]


def test_a_run_is_one_check_run_queued_then_completed(app_stack: Stack) -> None:
    seed_history(app_stack, 12)
    run_id = open_pull_request(app_stack)
    (check,) = checks_named(app_stack)
    assert check["status"] == "queued" and check["external_id"] == run_id
    assert app_stack.github.statuses == []  # an App answers with checks, not statuses
    keys = run_all_nodes(app_stack, run_id, scale={"4x8-8ps": 0.75})
    deliver_all(app_stack, keys[:1], copies=1)
    (check,) = checks_named(app_stack)
    assert check["status"] == "queued"  # no in-progress update: nobody waits for one
    deliver_all(app_stack, keys[1:], copies=1)
    (check,) = checks_named(app_stack)
    assert check["status"] == "completed" and check["conclusion"] == "failure"
    assert "4x8-8ps tput -25%" in check["output"]["title"]
    summary = check["output"]["summary"]
    assert summary.startswith("| KPI | 1x1 | 1x8 | 2x8-4ps | 4x8-8ps |")
    assert "🔻 **regressed**" in summary and "Δ -24.8%" in summary
    assert check["details_url"].startswith("https://distkpi.example.com/reports/")


@pytest.fixture
def github_app() -> Iterator[GitHubStandIn]:
    standin = GitHubStandIn(app=GitHubApp())
    standin.start()
    yield standin
    standin.stop()


def test_the_installation_token_is_cached_then_renewed_before_it_expires(
    github_app: GitHubStandIn,
) -> None:
    app = github_app.app
    assert app is not None
    now = [time.time()]
    auth = AppAuth(github_app.url, lambda: AppCredentials.from_secret(app.secret()))
    auth.clock = lambda: now[0]
    first = auth.token_for("PaddlePaddle/Paddle")  # asks for the installation, then a token
    assert auth.token_for("PaddlePaddle/Paddle") == first and app.issued == 1
    now[0] += 3400  # 200 s before the hour's token expires: renewed
    second = auth.token_for("PaddlePaddle/Paddle")
    assert second != first and app.issued == 2
    app.clock = lambda: now[0] + 3600  # and GitHub takes the old one no more
    assert not app.takes(f"Bearer {first}") and app.takes(f"Bearer {second}") is False


def test_a_jwt_github_refuses_is_an_auth_error_naming_no_secret(
    github_app: GitHubStandIn,
) -> None:
    app = github_app.app
    assert app is not None
    wrong = AppCredentials("1", app.private_key)
    auth = AppAuth(github_app.url, lambda: wrong)
    with pytest.raises(GitHubAuthError) as err:
        auth.token_for("PaddlePaddle/Paddle")
    assert "answered 401" in str(err.value) and "BEGIN" not in str(err.value)
    skewed = AppAuth(github_app.url, lambda: AppCredentials.from_secret(app.secret()))
    skewed.jwt_clock = lambda: time.time() + 3600  # a clock an hour fast
    with pytest.raises(GitHubAuthError):
        skewed.token_for("PaddlePaddle/Paddle")


def rerequested(name: str = "check_run", **changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(event(name)["payload"])
    payload[name].update(changes)
    return payload


def test_rerun_from_check_run_rerequested_makes_a_second_run(app_stack: Stack) -> None:
    first = open_pull_request(app_stack)
    deliver_all(app_stack, run_all_nodes(app_stack, first), copies=1)
    (done,) = checks_named(app_stack)
    assert done["conclusion"] == "success"
    payload = rerequested(external_id=first)
    response = app_stack.webhook("check_run", payload=payload)
    assert response["statusCode"] == 201, response
    (second,) = response["json"]["runs"]
    assert second != first
    assert [c["status"] for c in checks_named(app_stack)] == ["completed", "queued"]
    deliver_all(app_stack, run_all_nodes(app_stack, second), copies=1)
    # both runs are in the pull request's history; the commit counts once in a baseline
    rows = app_stack.table.scan()["Items"]
    history = {r["run_id"] for r in rows if str(r["PK"]).startswith("HIST#")}
    assert history == {first, second}


def test_a_rerun_of_a_run_still_going_is_refused_in_its_check(app_stack: Stack) -> None:
    first = open_pull_request(app_stack)
    response = app_stack.webhook("check_run", payload=rerequested(external_id=first))
    assert response["statusCode"] == 202 and response["json"]["still_going"] == [first]
    (check,) = checks_named(app_stack)
    assert check["output"]["title"] == f"re-run refused: run {first} of this commit is still going"
    assert len(app_stack.jobs()) == 4  # the first run's only


def test_a_check_suite_rerequested_reruns_every_suite(app_stack: Stack) -> None:
    first = open_pull_request(app_stack)
    deliver_all(app_stack, run_all_nodes(app_stack, first), copies=1)
    response = app_stack.webhook("check_suite", payload=rerequested("check_suite"))
    assert response["statusCode"] == 201 and len(response["json"]["runs"]) == 1


def test_checks_of_another_app_are_ignored(app_stack: Stack) -> None:
    other = rerequested(app={"id": 1, "slug": "ci"})
    response = app_stack.webhook("check_run", payload=other)
    assert response["statusCode"] == 202 and "another App" in response["json"]["message"]
    assert app_stack.jobs() == []


def test_an_outsiders_pull_request_is_action_required(app_stack: Stack) -> None:
    payload = with_installation(pull_request("opened"))
    assert app_stack.webhook("pull_request", payload=payload)["statusCode"] == 202
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "action_required"
    # the pull request's page, on GitHub's host (here the stand-in's)
    assert check["details_url"] == f"{app_stack.github.url}/PaddlePaddle/Paddle/pull/12091"


def test_a_refused_app_is_counted_and_its_results_published_once_it_works(
    app_stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    app = app_stack.github.app
    assert app is not None
    run_id = open_pull_request(app_stack)
    # the App's key is revoked: its tokens stop working and no new JWT is taken
    app.tokens.clear()
    app.app_id = "1"
    capsys.readouterr()
    deliver_all(app_stack, run_all_nodes(app_stack, run_id), copies=1)
    out = capsys.readouterr().out
    assert '"GitHubAuthFailures":[1.0]' in out
    item = app_stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    assert item["status"] == "done" and "published_at" not in item  # kept, not lost
    app.app_id = APP_ID  # fixed
    assert sweep(app_stack)["republished"] == 1
    (check,) = checks_named(app_stack)
    assert check["status"] == "completed"


def test_an_installation_that_lost_the_repository_is_counted_the_same(
    app_stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    app = app_stack.github.app
    assert app is not None
    run_id = open_pull_request(app_stack)
    app.lost_access.add("PaddlePaddle/Paddle")
    capsys.readouterr()
    deliver_all(app_stack, run_all_nodes(app_stack, run_id), copies=1)
    assert '"GitHubAuthFailures":[1.0]' in capsys.readouterr().out
    app.lost_access.clear()
    assert sweep(app_stack)["republished"] == 1


def test_no_token_key_or_jwt_reaches_any_log(
    app_stack: Stack, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    app = app_stack.github.app
    assert app is not None
    run_id = open_pull_request(app_stack)
    deliver_all(app_stack, run_all_nodes(app_stack, run_id), copies=1)
    issued = list(app.tokens)
    app.app_id = "1"  # the key is refused: the refusal is logged too
    wiring.reset()  # a new container, which has no installation token yet ...
    app_stack.table.delete_item(Key=dynamo_keys.app_token(58120731))  # ... nor the table
    app_stack.webhook("check_run", payload=rerequested(external_id=run_id))
    captured = capsys.readouterr()
    # each record whole, with its extra keys, as the JSON formatter would write them
    records = " ".join(str(vars(r)) for r in caplog.records)
    logs = captured.out + captured.err + caplog.text + records
    assert issued and "GitHub answered 401 to the App" in logs
    app.app_id = APP_ID
    jwt = AppAuth(app_stack.github.url, lambda: AppCredentials.from_secret(app.secret())).jwt()
    for secret in [*issued, app.private_key.splitlines()[1], jwt, jwt.split(".")[2]]:
        assert secret not in logs
    assert "ghs_" not in logs


def test_rerunning_a_check_awaiting_approval_starts_nothing(app_stack: Stack) -> None:
    """The action_required check of an outsider's pull request has a "Re-run" button too:
    it went around the approval and started the runs."""
    waiting = with_installation(pull_request("opened"))
    assert app_stack.webhook("pull_request", payload=waiting)["statusCode"] == 202
    (check,) = checks_named(app_stack)
    payload = with_installation(rerequested(external_id=check["external_id"]))
    payload["check_run"]["head_sha"] = "a" * 40
    response = app_stack.webhook("check_run", payload=payload)
    assert response["statusCode"] == 202, response
    assert response["json"]["never_admitted"] == ["resnet50"]
    suite = with_installation(rerequested("check_suite", head_sha="a" * 40))
    assert app_stack.webhook("check_suite", payload=suite)["json"]["never_admitted"] == ["resnet50"]
    assert app_stack.jobs() == []


def test_a_rerun_repeats_the_admitted_run_with_its_trigger(app_stack: Stack) -> None:
    """A fork's check run names no pull request (GitHub leaves them out for forks): with
    head_branch develop it was taken for a push to develop, into develop's history."""
    first = open_pull_request(app_stack)
    deliver_all(app_stack, run_all_nodes(app_stack, first), copies=1)
    payload = rerequested(external_id=first)
    payload["check_run"]["check_suite"]["head_branch"] = "develop"
    payload["check_run"]["check_suite"]["pull_requests"] = []
    payload["check_run"]["pull_requests"] = []
    (second,) = app_stack.webhook("check_run", payload=payload)["json"]["runs"]
    run = app_stack.table.get_item(Key={"PK": f"RUN#{second}", "SK": "RUN"})["Item"]
    assert run["event"] == "pull_request" and run["pull_request"] == 12091


def test_a_check_run_is_updated_by_its_kept_id_with_no_lookup(app_stack: Stack) -> None:
    run_id = open_pull_request(app_stack)
    (check,) = checks_named(app_stack)
    asked = len(app_stack.github.requested)
    keys = run_all_nodes(app_stack, run_id)
    deliver_all(app_stack, keys, copies=1)
    (check,) = checks_named(app_stack)
    assert check["status"] == "completed"
    since = app_stack.github.requested[asked:]
    update = f"PATCH /repos/PaddlePaddle/Paddle/check-runs/{check['id']}"
    assert since.count(update) == 1  # completed, with its verdict
    assert not [r for r in since if r.startswith("GET") and r.endswith("/check-runs")]


def test_a_check_run_whose_id_was_never_kept_is_created_anew_with_no_lookup(
    app_stack: Stack,
) -> None:
    run_id = open_pull_request(app_stack)
    app_stack.table.update_item(Key=dynamo_keys.run(run_id), UpdateExpression="REMOVE check_run")
    asked = len(app_stack.github.requested)
    deliver_all(app_stack, run_all_nodes(app_stack, run_id), copies=1)
    queued, completed = checks_named(app_stack)
    assert queued["status"] == "queued"
    assert completed["status"] == "completed" and completed["external_id"] == run_id
    since = app_stack.github.requested[asked:]
    assert not [r for r in since if r.startswith("GET") and "/check-runs" in r]
    assert since.count("POST /repos/PaddlePaddle/Paddle/check-runs") == 1


def test_a_suites_check_run_with_no_run_is_updated_by_its_kept_id(app_stack: Stack) -> None:
    payload = with_installation(pull_request("opened"))  # an outsider's: awaiting approval
    for delivery in ("d-1", "d-2"):
        answer = app_stack.webhook("pull_request", payload=payload, delivery=delivery)
        assert answer["statusCode"] == 202
    (check,) = checks_named(app_stack)
    assert check["conclusion"] == "action_required"
    requested = app_stack.github.requested
    assert requested.count("POST /repos/PaddlePaddle/Paddle/check-runs") == 1
    assert requested.count(f"PATCH /repos/PaddlePaddle/Paddle/check-runs/{check['id']}") == 1
    assert not [r for r in requested if r.startswith("GET") and "/check-runs" in r]
