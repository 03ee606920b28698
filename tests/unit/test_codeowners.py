"""CODEOWNERS read as GitHub reads it, on GitHub's own example file
(tests/data/codeowners/README.md): each assertion is what that file's comments say."""

from __future__ import annotations

from pathlib import Path

import pytest

from distkpi.domain.github.codeowners import mentions, owners_for, parse, probe_paths

DATA = Path(__file__).resolve().parents[1] / "data" / "codeowners"
EXAMPLE = DATA / "github_docs_example.CODEOWNERS"


@pytest.fixture(scope="module")
def example():
    return parse(EXAMPLE.read_text())


@pytest.mark.parametrize(
    ("path", "owners"),
    [
        ("README.md", ("@global-owner1", "@global-owner2")),  # `*`, the default owners
        ("src/app.js", ("@js-owner",)),  # `*.js`, its inline comment no owner
        ("cmd/main.go", ("docs@example.com",)),
        ("notes/todo.txt", ("@octo-org/octocats",)),
        ("build/logs/today/run.log", ("@octocat",)),  # `**/logs` is a later line than /build/logs/
        ("docs/getting-started.md", ("@doctocat",)),  # /docs/ comes after docs/*
        ("src/apps/main.c", ("@octocat",)),  # `apps/` at any depth
        ("scripts/deploy.sh", ("@doctocat", "@octocat")),
        ("deeply/nested/logs/a.txt", ("@octocat",)),
        ("apps/web/index.html", ("@octocat",)),
        ("apps/github/hook.rb", ("@doctocat",)),  # the last /apps/github line wins
    ],
)
def test_the_last_matching_line_of_githubs_example_wins(example, path, owners) -> None:
    assert example.owners_of(path) == owners
    assert example.problems == ()


def test_a_line_without_owners_leaves_its_paths_without_any() -> None:
    codeowners = parse("/apps/ @octocat\n/apps/github\n")
    assert codeowners.owners_of("apps/github/x.rb") == ()
    assert codeowners.owners_of("apps/web/x.rb") == ("@octocat",)


def test_dir_star_owns_only_the_files_directly_in_dir() -> None:
    codeowners = parse("docs/*  docs@example.com\n")
    assert codeowners.owners_of("docs/getting-started.md") == ("docs@example.com",)
    assert codeowners.owners_of("docs/build-app/troubleshooting.md") == ()
    assert codeowners.owners_of("other/docs/a.md") == ()  # a middle slash anchors it


def test_lines_github_does_not_support_are_skipped_and_named() -> None:
    codeowners = parse(
        "* @all\n!*.md @nobody\n*.[ch] @c-team\n\\#notes @x\n*.py not-an-owner @py\n"
    )
    assert codeowners.problems == (
        "line 2: GitHub does not support '!*.md'",
        "line 3: GitHub does not support '*.[ch]'",
        "line 4: GitHub does not support '\\\\#notes'",
        "line 5: not an owner: not-an-owner",
    )
    assert codeowners.owners_of("a.c") == ("@all",)
    assert codeowners.owners_of("a.py") == ("@py",)


def test_a_suites_owners_are_those_of_the_folders_its_paths_watch(example) -> None:
    assert probe_paths(["apps/web/**", "scripts/*.sh", "setup.py"]) == (
        "apps/web",
        "scripts",
        "setup.py",
    )
    assert owners_for(example, ["apps/web/**", "scripts/*.sh"]) == (
        "@octocat",
        "@doctocat",
    )
    # no paths: the whole repository's, the `*` line
    assert owners_for(example, None) == ("@global-owner1", "@global-owner2")


def test_mentions_keep_logins_and_teams_once_and_drop_addresses() -> None:
    assert mentions(["@octocat", "docs@example.com", "octo-org/team", "@octocat"]) == (
        "@octocat",
        "@octo-org/team",
    )
