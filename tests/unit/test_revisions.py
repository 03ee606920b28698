"""`--sha` as a person gives it: a full sha, a unique prefix of a stored run's sha, or any git
revision of the repository the command runs in; anything else is a usage error saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from distkpi_cli.commands.common import UsageError
from distkpi_cli.revisions import commit_of, stored_sha
from tests.conftest import git

STORED = ["3a2fa062fa" + "0" * 30, "3a2fb11111" + "1" * 30, "8cfd2a0b10" + "2" * 30]


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for n in range(2):
        (repo / "f").write_text(str(n))
        git(repo, "add", "f")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{n}")
    return repo


def test_a_unique_prefix_of_a_stored_sha(repository: Path) -> None:
    assert stored_sha("8cfd2a0", lambda: STORED, repository) == STORED[2]
    assert stored_sha("3A2FA0", lambda: STORED, repository) == STORED[0]


def test_a_full_sha_is_taken_as_given(repository: Path) -> None:
    assert stored_sha("f" * 40, lambda: STORED, repository) == "f" * 40


def test_a_git_revision_of_the_repository(repository: Path) -> None:
    head = git(repository, "rev-parse", "HEAD")
    assert stored_sha("HEAD", lambda: STORED, repository) == head
    assert stored_sha(head[:7], lambda: STORED, repository) == head
    assert commit_of("HEAD~1", repository) == git(repository, "rev-parse", "HEAD~1")


def test_an_ambiguous_prefix_names_the_runs(repository: Path) -> None:
    with pytest.raises(UsageError) as refused:
        stored_sha("3a2f", lambda: STORED, repository)
    assert str(refused.value) == (
        "--sha 3a2f: ambiguous, the sha of runs 3a2fa062fa00, 3a2fb1111111: give more digits"
    )


@pytest.mark.parametrize("rev", ["nonexistent", "abcdef1", "--all"])
def test_a_revision_that_names_nothing_is_a_usage_error(repository: Path, rev: str) -> None:
    with pytest.raises(UsageError) as refused:
        stored_sha(rev, lambda: STORED, repository)
    assert str(refused.value) == (
        f"--sha {rev}: no stored run's sha starts with it and it is not a commit of "
        f"{repository.resolve()}: give a full sha, a unique prefix, or a revision run inside "
        "the repository"
    )


def test_outside_a_repository_only_stored_shas_resolve(tmp_path: Path) -> None:
    assert stored_sha("8cfd", lambda: STORED, tmp_path) == STORED[2]
    with pytest.raises(UsageError):
        stored_sha("HEAD", lambda: STORED, tmp_path)
