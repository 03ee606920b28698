"""A paired run's base from a real git repository, through the GitHub stand-in that serves
it and the real adapter and webhook: a pull request's merge base (`git merge-base`, not the
base branch's tip), a pushed merge's first parent (`git rev-parse <sha>^1`), a root commit."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from distkpi.adapters.github import GitHubStatusClient
from distkpi.domain.layout import run_spec_key
from distkpi.exceptions import GitHubError
from distkpi_cli.local.aws_stack import BUCKET
from distkpi_cli.local.github_standin import GitHubStandIn
from tests.conftest import git
from tests.integration.conftest import ROOT, Stack, event
from tests.integration.test_flow import final_statuses, jobs_by_config, submitted

REPO = "PaddlePaddle/Paddle"  # an allowed repository of the stack; the stand-in serves any


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"change {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """root - a - b (develop), with a feature branched off at a, and develop's merge m of
    the feature (first parent b)."""
    repo = tmp_path_factory.mktemp("repository")
    git(repo, "init", "-q", "-b", "develop")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    shas = {"root": commit(repo, "README.md", "root\n"), "a": commit(repo, "a.txt", "a\n")}
    git(repo, "checkout", "-q", "-b", "feature")
    shas["feature"] = commit(repo, "infra.txt", "feature\n")
    git(repo, "checkout", "-q", "develop")
    shas["b"] = commit(repo, "b.txt", "b\n")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    shas["merge"] = git(repo, "rev-parse", "HEAD")
    shas["path"] = str(repo)
    return shas


@pytest.fixture
def served(history: dict[str, str]) -> Iterator[tuple[GitHubStandIn, GitHubStatusClient]]:
    standin = GitHubStandIn(token="t0ken", repository=Path(history["path"]))
    standin.start()
    yield standin, GitHubStatusClient(standin.url, lambda repo: "t0ken", retries=0)
    standin.stop()


def test_the_adapter_gets_git_s_merge_base_and_parents_from_the_stand_in(
    history: dict[str, str], served: tuple[GitHubStandIn, GitHubStatusClient]
) -> None:
    _, client = served
    repo = Path(history["path"])
    comparison = client.compare(REPO, history["b"], history["feature"])
    assert comparison.merge_base == history["a"] == git(repo, "merge-base", history["b"], "feature")
    assert comparison.merge_base != history["b"]
    assert comparison.files == ["infra.txt"]  # what the feature changes since it branched off
    parents = client.commit_parents(REPO, history["merge"])
    assert parents == (history["b"], history["feature"])
    assert parents[0] == git(repo, "rev-parse", f"{history['merge']}^1")
    assert client.commit_parents(REPO, history["root"]) == ()
    with pytest.raises(GitHubError, match="404"):
        client.commit_parents(REPO, "0123456789" * 4)
    unknown = client.compare(REPO, "0123456789" * 4, history["feature"])
    assert (unknown.merge_base, unknown.files, unknown.problem) == (
        None,
        None,
        "GitHub answered 404",
    )


def test_the_default_branch_s_head_is_the_served_repository_s_head_without_such_a_branch(
    tmp_path: Path,
) -> None:
    """The schedule asks for the default branch (the stand-in's `develop`): a repository
    served without one (a checkout of `main`) answers with its HEAD, one with it with its
    tip, whatever is checked out."""
    repo = tmp_path / "main-only"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    head = commit(repo, "README.md", "main\n")
    standin = GitHubStandIn(token="t0ken", repository=repo)
    standin.start()
    try:
        client = GitHubStatusClient(standin.url, lambda repo: "t0ken", retries=0)
        assert client.default_branch_head(REPO) == ("develop", head)
        git(repo, "checkout", "-q", "-b", "develop")
        tip = commit(repo, "b.txt", "b\n")
        git(repo, "checkout", "-q", "main")
        assert client.default_branch_head(REPO) == ("develop", tip)
    finally:
        standin.stop()


def deploy_paired(stack: Stack) -> None:
    stack.s3.delete_object(Bucket=BUCKET, Key="suites/resnet50.yaml")
    paired = (ROOT / "infra" / "suites" / "local-paired.yaml").read_bytes()
    stack.s3.put_object(Bucket=BUCKET, Key="suites/local-paired.yaml", Body=paired)


def paired_of(stack: Stack, run_id: str) -> object:
    body = stack.s3.get_object(Bucket=BUCKET, Key=run_spec_key(run_id))["Body"].read()
    return json.loads(body)["paired"]


def test_a_pull_request_through_the_webhook_pairs_with_git_s_merge_base(
    stack: Stack, history: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.github, "repository", Path(history["path"]))
    deploy_paired(stack)
    payload = copy.deepcopy(event("pull_request")["payload"])
    payload["pull_request"]["head"]["sha"] = history["feature"]
    payload["pull_request"]["base"]["sha"] = history["b"]  # develop's tip has moved on
    response = stack.webhook("pull_request", payload=payload)
    (run_id,) = response["json"]["runs"]
    assert paired_of(stack, run_id) == {"base_sha": history["a"], "max_pairs": 4, "warmup": True}
    jobs = jobs_by_config(stack, run_id)
    assert sorted(jobs) == ["1x1", "1x1-1ps", "1x2"]
    for job_id in jobs.values():
        request = submitted(stack, job_id)
        assert request["timeout"] == {"attemptDurationSeconds": 9 * 7200 + 7200}
        containers = [request.get("containerOverrides")] + [
            g["containerOverrides"]
            for g in request.get("nodeOverrides", {}).get("nodePropertyOverrides", [])
        ]
        for container in filter(None, containers):
            env = {e["name"]: e["value"] for e in container["environment"]}
            assert env["DISTKPI_BASE_SHA"] == history["a"]
            assert json.loads(env["DISTKPI_PAIRED"]) == {"max_pairs": 4, "warmup": True}


def test_a_push_through_the_webhook_pairs_with_git_s_first_parent(
    stack: Stack, history: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.github, "repository", Path(history["path"]))
    deploy_paired(stack)
    payload = copy.deepcopy(event("push")["payload"])
    payload["after"], payload["before"] = history["merge"], history["b"]
    (run_id,) = stack.webhook("push", payload=payload)["json"]["runs"]
    assert paired_of(stack, run_id) == {"base_sha": history["b"], "max_pairs": 4, "warmup": True}


def test_a_root_commit_pushed_through_the_webhook_is_an_error_with_no_job(
    stack: Stack, history: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.github, "repository", Path(history["path"]))
    deploy_paired(stack)
    payload = copy.deepcopy(event("push")["payload"])
    payload["after"] = history["root"]
    (run_id,) = stack.webhook("push", payload=payload)["json"]["runs"]
    assert jobs_by_config(stack, run_id) == {}
    (final,) = final_statuses(stack)
    assert (final["state"], final["description"]) == (
        "error",
        f"all 3 configs failed: not submitted: no base to pair with: {history['root'][:10]} is "
        "a root commit (no parent)",
    )


def test_a_push_whose_parent_github_cannot_tell_is_an_error_with_no_job(
    stack: Stack, history: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.github, "repository", Path(history["path"]))
    deploy_paired(stack)
    stack.github.fail_next(*[503] * 5)  # GitHub down through every retry of the lookup
    payload = copy.deepcopy(event("push")["payload"])
    payload["after"] = history["merge"]
    (run_id,) = stack.webhook("push", payload=payload)["json"]["runs"]
    assert jobs_by_config(stack, run_id) == {}
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert final["description"].startswith(
        f"all 3 configs failed: not submitted: no base to pair with: the parent of "
        f"{history['merge'][:10]}: GitHub answered 503"
    ), final
