"""The commit a paired run measures its head against, read from GitHub's real answers
(tests/data/github): a pull request's merge base from the compare, a push's first parent,
and what a root commit or a missing answer gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.github.commits import (
    Comparison,
    NoBase,
    merge_base_of,
    parents_of,
    pull_request_base,
    push_base,
)
from distkpi.domain.github.webhook import Trigger

DATA = Path(__file__).resolve().parents[1] / "data" / "github"
HEAD = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
BASE_TIP = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
PULL_REQUEST = Trigger(
    "PaddlePaddle/Paddle",
    HEAD,
    "refs/pull/12091/head",
    "fix-ps",
    "pull_request",
    "develop",
    base_sha=BASE_TIP,
    pull_request=12091,
)
PUSH = Trigger("PaddlePaddle/Paddle", HEAD, "refs/heads/develop", "develop", "push", "develop")


def answer(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def test_a_pull_request_pairs_with_the_merge_base_the_compare_names() -> None:
    compare = answer("compare.json")
    assert merge_base_of(compare) == "4303c5b90e2216d927155e9609436ccb8984c495"
    comparison = Comparison(files=["setup.py"], merge_base=merge_base_of(compare))
    assert pull_request_base(PULL_REQUEST, comparison) == compare["merge_base_commit"]["sha"]


@pytest.mark.parametrize(
    ("comparison", "reason"),
    [
        (
            Comparison(files=["setup.py"]),
            "no base to pair with: GitHub's compare 1a2b3c4d5e...9f4e1c2b7a: its answer names "
            "no merge_base_commit",
        ),
        (
            Comparison(problem="GitHub answered 404"),
            "no base to pair with: GitHub's compare 1a2b3c4d5e...9f4e1c2b7a: GitHub answered 404",
        ),
        (
            None,
            "no base to pair with: the pull request of 9f4e1c2b7a names none",
        ),
    ],
)
def test_a_pull_request_without_a_merge_base_has_no_base_and_says_why(
    comparison: Comparison | None, reason: str
) -> None:
    assert pull_request_base(PULL_REQUEST, comparison) == NoBase(reason)


@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"merge_base_commit": None},
        {"merge_base_commit": {"sha": "not-a-sha"}},
        {"merge_base_commit": {"sha": "A" * 40}},
        ["merge_base_commit"],
    ],
)
def test_a_compare_answer_without_a_valid_merge_base_names_none(broken: Any) -> None:
    assert merge_base_of(broken) is None


def test_a_push_pairs_with_its_first_parent() -> None:
    commit = answer("git_commit.json")
    assert parents_of(commit) == ("a50ae51b2c351b889055568bcaa9ab6000f1677f",)
    assert push_base(PUSH, parents_of(commit) or ()) == "a50ae51b2c351b889055568bcaa9ab6000f1677f"


def test_a_merge_pushed_pairs_with_its_first_parent_not_the_merged_branch() -> None:
    merge = answer("compare.json")["base_commit"]  # a real merge commit, as GitHub lists one
    parents = parents_of(merge)
    assert parents == (
        "936f4a97f1a86392637ec002bbf89ff036a5062d",
        "2a7e80e6421c5d4d201d60619068dea6bae612cb",
    )
    assert push_base(PUSH, parents) == "936f4a97f1a86392637ec002bbf89ff036a5062d"


def test_a_root_commit_has_no_base() -> None:
    root = answer("git_commit_root.json")
    assert parents_of(root) == ()
    assert push_base(PUSH, ()) == NoBase(
        "no base to pair with: 9f4e1c2b7a is a root commit (no parent)"
    )


def test_a_parent_github_could_not_tell_has_no_base_and_says_why() -> None:
    assert str(push_base(PUSH, "GitHub answered 404 to GET for PaddlePaddle/Paddle")) == (
        "no base to pair with: the parent of 9f4e1c2b7a: GitHub answered 404 to GET for "
        "PaddlePaddle/Paddle"
    )


@pytest.mark.parametrize(
    "broken",
    [{}, {"parents": None}, {"parents": [{"sha": "x"}]}, {"parents": ["a" * 40]}, []],
)
def test_a_commit_answer_without_valid_parents_lists_none(broken: Any) -> None:
    assert parents_of(broken) is None
