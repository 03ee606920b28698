"""The GitHub adapter's pull-request comments and file contents against the stand-in, over
HTTP as against GitHub: a comment created, listed and edited; one that is gone a
GitHubNotFoundError; a file at a commit of the repository it serves, a missing one None."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from distkpi.adapters.github import GitHubStatusClient
from distkpi.exceptions import GitHubError, GitHubNotFoundError
from distkpi_cli.local.github_standin import GitHubStandIn
from tests.conftest import git
from tests.e2e.test_local import commit_all

REPO = "PaddlePaddle/Paddle"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[GitHubStandIn, GitHubStatusClient, dict[str, str]]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / ".github").mkdir()
    (repo / ".github" / "CODEOWNERS").write_text("* @first\n")
    shas = {"first": commit_all(repo, "first")}
    (repo / ".github" / "CODEOWNERS").write_text("* @second\n")
    shas["second"] = commit_all(repo, "second")
    standin = GitHubStandIn(token="t0k3n", repository=repo)
    client = GitHubStatusClient(standin.start(), lambda _: "t0k3n", retries=0)
    yield standin, client, shas
    standin.stop()


def test_a_comment_is_created_then_edited_in_place(served) -> None:
    standin, client, _ = served
    comment_id = client.create_issue_comment(REPO, 7, "<!-- distkpi:suite=resnet50 -->\nfirst")
    client.update_issue_comment(REPO, comment_id, "<!-- distkpi:suite=resnet50 -->\nsecond")
    (comment,) = standin.comments
    assert (comment["id"], comment["number"], comment["edits"]) == (comment_id, 7, 1)
    assert comment["body"].endswith("\nsecond")


def test_a_comment_that_is_gone_is_not_found_and_an_empty_body_refused(served) -> None:
    _, client, _ = served
    with pytest.raises(GitHubNotFoundError):
        client.update_issue_comment(REPO, 41, "anything")
    with pytest.raises(GitHubError, match="422"):
        client.create_issue_comment(REPO, 7, "")


def test_a_file_is_read_at_the_commit_asked_for(served) -> None:
    _, client, shas = served
    assert client.file_text(REPO, ".github/CODEOWNERS", shas["first"]) == "* @first\n"
    assert client.file_text(REPO, ".github/CODEOWNERS", shas["second"]) == "* @second\n"
    assert client.file_text(REPO, "CODEOWNERS", shas["second"]) is None
