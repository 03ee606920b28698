"""A bisection's range, step decisions, bound and endings (domain/bisect), on GitHub's real
compare answer (tests/data/github/compare.json: v0.6...v0.7 of PyGithub, with two merges)."""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.bisect.deciding import Ends, Side, kpi_key, step_side
from distkpi.domain.bisect.line import Commit, NoLine, first_parent_line
from distkpi.domain.bisect.plan import (
    Bisection,
    BisectState,
    Ended,
    RunAt,
    Step,
    default_max_runs,
    next_move,
)
from distkpi.domain.bisect.texts import bisection_alert, bisection_markdown
from distkpi.domain.planning.suites import parse_suite
from distkpi.exceptions import ContractError, DistkpiError
from distkpi_cli.local.demo import run_local
from tests.fakes import ROOT

ANSWER = json.loads((ROOT / "tests" / "data" / "github" / "compare.json").read_text())
GOOD = "4303c5b90e2216d927155e9609436ccb8984c495"  # v0.6, the compare's base
FIRST = "5bb654d26dd014d36794acd1e6ecf3736f12aad7"  # on the topic branch
MERGE = "cb0313157bf904f2d364377d35d9397b269547a5"  # merges the topic branch into develop
RELEASE = "0cec0d25e606c023a62a4fc7cdc815309ebf6d16"
HEAD = "ecda065e01876209d2bdf5fe4e91cee8ffaa9ff7"  # v0.7: merges develop, first parent GOOD


def test_the_recorded_answer_is_what_the_tests_say() -> None:
    listed = {c["sha"]: [p["sha"] for p in c["parents"]] for c in ANSWER["commits"]}
    assert listed == {FIRST: [GOOD], MERGE: [GOOD, FIRST], RELEASE: [MERGE], HEAD: [GOOD, RELEASE]}


def test_a_merge_is_one_step_on_the_first_parent_line() -> None:
    # v0.7 is a merge straight onto v0.6: its line is itself, one commit
    assert first_parent_line(ANSWER["commits"], GOOD, HEAD) == (
        Commit(HEAD, "Vincent Jacques", "Merge branch 'develop'"),
    )


def test_the_line_goes_by_first_parents_oldest_first() -> None:
    line = first_parent_line(ANSWER["commits"], GOOD, RELEASE)
    assert isinstance(line, tuple)
    assert [c.sha for c in line] == [MERGE, RELEASE]  # FIRST came in by the merge's 2nd parent
    assert line[1] == Commit(RELEASE, "Vincent Jacques", "Publish version 0.7")


def test_a_line_that_never_reaches_good_is_no_line() -> None:
    # FIRST is on the topic branch: MERGE's first parent passes it by
    found = first_parent_line(ANSWER["commits"], FIRST, RELEASE)
    assert isinstance(found, NoLine)
    assert str(found) == (
        "the first-parent line of 0cec0d25e6 reaches 4303c5b90e, which the compare omits, "
        "not 5bb654d26d"
    )


def test_a_bad_commit_the_compare_does_not_list_is_no_line() -> None:
    found = first_parent_line(ANSWER["commits"], GOOD, "a" * 40)
    assert isinstance(found, NoLine) and "aaaaaaaaaa, which the compare omits" in str(found)


def test_entries_without_a_sha_or_parents_are_left_out() -> None:
    broken = copy.deepcopy(ANSWER["commits"])
    del broken[2]["parents"]  # RELEASE
    broken.append({"sha": "not a sha", "parents": []})
    found = first_parent_line(broken, GOOD, RELEASE)
    assert isinstance(found, NoLine)
    assert str(first_parent_line([], GOOD, GOOD)) == "good and bad are one commit, 4303c5b90e"


def test_a_root_commit_on_the_line_is_no_line() -> None:
    root = copy.deepcopy(ANSWER["commits"][0])
    root["parents"] = []
    found = first_parent_line([root], GOOD, FIRST)
    assert str(found) == "the first-parent line of 5bb654d26d reaches a root commit, not 4303c5b90e"


# --- the step decision: 30 values of a throughput with 2% noise, 1000 good, 750 bad


HISTORY = tuple(1000.0 * (1 + 0.02 * ((i * 7) % 5 - 2) / 2) for i in range(30))
ENDS = Ends("4x8-8ps", "throughput", good=1000.0, bad=750.0, history=HISTORY)
KEY = kpi_key("4x8-8ps", "throughput")


@pytest.mark.parametrize(
    ("value", "side"),
    [(995.0, Side.GOOD), (1010.0, Side.GOOD), (760.0, Side.BAD), (740.0, Side.BAD)],
)
def test_a_step_near_one_end_is_on_its_side(value: float, side: Side) -> None:
    assert step_side([ENDS], {KEY: [value]}, 0.01) is side


def test_a_step_between_the_ends_is_on_neither_side() -> None:
    assert step_side([ENDS], {KEY: [870.0]}, 0.01) is Side.NEITHER


def test_noise_as_large_as_the_regression_leaves_a_step_on_neither_side() -> None:
    noisy = Ends(
        "1x1", "throughput", 1000.0, 750.0, tuple(1000.0 * (0.7 + 0.1 * (i % 7)) for i in range(30))
    )
    assert step_side([noisy], {kpi_key("1x1", "throughput"): [980.0]}, 0.01) is Side.NEITHER


def test_a_second_run_of_the_step_decides_what_one_could_not() -> None:
    noisy = tuple(1000.0 * (1 + 0.06 * ((i * 7) % 5 - 2) / 2) for i in range(30))
    ends = Ends("1x1", "throughput", 1000.0, 850.0, noisy)
    key = kpi_key("1x1", "throughput")
    assert step_side([ends], {key: [880.0]}, 0.01) is Side.NEITHER
    assert step_side([ends], {key: [880.0, 860.0]}, 0.01) is Side.BAD


def test_a_lower_is_better_kpi_is_bad_when_it_rose() -> None:
    times = tuple(240.0 * (1 + 0.02 * ((i * 3) % 4 - 1.5)) for i in range(20))
    ends = Ends("1x8", "time_to_accuracy_s", good=240.0, bad=320.0, history=times)
    key = kpi_key("1x8", "time_to_accuracy_s")
    assert step_side([ends], {key: [318.0]}, 0.01) is Side.BAD
    assert step_side([ends], {key: [242.0]}, 0.01) is Side.GOOD


def test_every_regressed_kpi_must_agree() -> None:
    other = Ends("1x8", "throughput", 700.0, 500.0, tuple(v * 0.7 for v in HISTORY))
    values = {KEY: [760.0], kpi_key("1x8", "throughput"): [700.0]}
    assert step_side([ENDS, other], values, 0.01) is Side.NEITHER
    values[kpi_key("1x8", "throughput")] = [505.0]
    assert step_side([ENDS, other], values, 0.01) is Side.BAD


def test_a_kpi_the_step_did_not_report_is_neither() -> None:
    assert step_side([ENDS], {}, 0.01) is Side.NEITHER


def test_without_a_history_for_a_spread_the_nearer_end_decides() -> None:
    short = Ends("1x1", "throughput", 1000.0, 750.0, history=(1000.0,))
    key = kpi_key("1x1", "throughput")
    assert step_side([short], {key: [800.0]}, 0.01) is Side.BAD
    assert step_side([short], {key: [950.0]}, 0.01) is Side.GOOD


def test_ends_travel_as_json() -> None:
    assert Ends.from_json(json.loads(json.dumps(ENDS.to_json()))) == ENDS


# --- the course of a bisection over 8 commits


LINE = tuple(Commit(f"{i:x}" * 40, "A. Person", f"change {i}") for i in range(1, 9))


def bisection(*steps: Step, max_runs: int | None = None) -> Bisection:
    return Bisection(
        repo="acme/models",
        branch="develop",
        model="resnet50",
        bad_run_id="resnet50-8888888888-abcd1234",
        good="0" * 40,
        bad=LINE[-1].sha,
        configs=("4x8-8ps",),
        line=LINE,
        ends=(ENDS,),
        max_runs=max_runs or default_max_runs(len(LINE)),
        created_at="2026-11-30T03:00:00.000",
        steps=steps,
    )


def done(sha_index: int, number: int, side: Side) -> Step:
    return Step(LINE[sha_index].sha, f"resnet50-8888888888-abcd1234-b{number}", side)


@pytest.mark.parametrize(("commits", "runs"), [(1, 1), (2, 1), (3, 2), (8, 3), (9, 4), (300, 8)])
def test_the_default_bound_is_enough_for_the_range_and_at_most_8(commits: int, runs: int) -> None:
    assert default_max_runs(commits) == runs


def simulate(culprit: int) -> tuple[list[int], Ended]:
    """Bisect LINE whose commits from ``culprit`` on are bad: the indexes measured."""
    steps: list[Step] = []
    measured: list[int] = []
    while True:
        move = next_move(bisection(*steps))
        if isinstance(move, Ended):
            return measured, move
        assert isinstance(move, RunAt)
        i = next(k for k, c in enumerate(LINE) if c.sha == move.sha)
        measured.append(i)
        steps.append(Step(move.sha, move.run_id, Side.BAD if i >= culprit else Side.GOOD))


@pytest.mark.parametrize("culprit", range(8))
def test_eight_commits_name_any_culprit_in_three_steps(culprit: int) -> None:
    measured, end = simulate(culprit)
    assert len(measured) == 3
    assert end.state is BisectState.FOUND and end.culprit == LINE[culprit].sha
    assert (end.low, end.high) == (culprit - 1, culprit)


def test_the_first_step_is_the_midpoint_and_none_while_it_runs() -> None:
    first = next_move(bisection())
    assert first == RunAt(LINE[3].sha, "resnet50-8888888888-abcd1234-b1")
    assert next_move(bisection(Step(LINE[3].sha, "resnet50-8888888888-abcd1234-b1"))) is None


def test_an_error_step_is_retried_once_then_inconclusive_with_the_range_narrowed() -> None:
    steps = (done(3, 1, Side.BAD), done(1, 2, Side.ERROR))
    assert next_move(bisection(*steps)) == RunAt(LINE[1].sha, "resnet50-8888888888-abcd1234-b3")
    end = next_move(bisection(*steps, done(1, 3, Side.ERROR)))
    assert end == Ended(
        BisectState.INCONCLUSIVE, None, f"the step at {LINE[1].sha[:10]} ended error twice", -1, 3
    )


def test_a_retried_step_that_decides_goes_on() -> None:
    steps = (done(3, 1, Side.BAD), done(1, 2, Side.ERROR), done(1, 3, Side.GOOD))
    assert next_move(bisection(*steps)) == RunAt(LINE[2].sha, "resnet50-8888888888-abcd1234-b4")


def test_a_step_on_neither_side_twice_ends_inconclusive() -> None:
    steps = (done(3, 1, Side.GOOD), done(5, 2, Side.NEITHER))
    assert next_move(bisection(*steps)) == RunAt(LINE[5].sha, "resnet50-8888888888-abcd1234-b3")
    end = next_move(bisection(*steps, done(5, 3, Side.NEITHER)))
    assert isinstance(end, Ended) and end.state is BisectState.INCONCLUSIVE
    assert (end.low, end.high, end.culprit) == (3, 7, None)
    assert "neither side twice" in end.why


def test_the_bound_ends_a_bisection_inconclusive() -> None:
    end = next_move(bisection(done(3, 1, Side.GOOD), max_runs=1))
    assert end == Ended(
        BisectState.INCONCLUSIVE,
        None,
        "1 step(s) taken, the most this suite allows; 4 commits left",
        3,
        7,
    )


def test_a_bisection_travels_as_json() -> None:
    stored = bisection(done(3, 1, Side.GOOD), Step(LINE[5].sha, "r", None, 1.5, {KEY: 760.0}))
    assert Bisection.from_json(json.loads(json.dumps(stored.to_json()))) == stored


def suite(bisect: Any) -> str:
    text = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    return text + f"bisect: {json.dumps(bisect)}\n"


def test_a_suite_bisects_by_default_and_may_turn_it_off_or_bound_it() -> None:
    plain = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    assert parse_suite(plain, "resnet50.yaml").bisect.enabled
    off = parse_suite(suite({"enabled": False}), "resnet50.yaml")
    assert not off.bisect.enabled
    assert parse_suite(suite({"max_runs": 5}), "resnet50.yaml").bisect.max_runs == 5


@pytest.mark.parametrize(
    ("bisect", "error"),
    [
        ({"enable": True}, "bisect.enable: Extra inputs are not permitted"),
        ({"max_runs": 0}, "bisect.max_runs: Input should be greater than or equal to 1"),
    ],
)
def test_a_bad_bisect_field_names_the_file_and_field(bisect: Any, error: str) -> None:
    with pytest.raises(ContractError, match=r"resnet50\.yaml: invalid suite") as caught:
        parse_suite(suite(bisect), "resnet50.yaml")
    assert error in str(caught.value)


def test_a_commit_s_title_and_author_reach_the_texts_as_nobody_s_markup() -> None:
    hostile = Commit(LINE[5].sha, "@octocat", "Fix [it](https://evil.example) **now** @team")
    found = replace(
        bisection(done(3, 1, Side.GOOD), done(5, 2, Side.BAD), done(4, 3, Side.GOOD)),
        line=(*LINE[:5], hostile, *LINE[6:]),
        state=BisectState.FOUND,
        culprit=hostile.sha,
        why="found",
        low=4,
        high=5,
    )
    markdown = bisection_markdown(found, web_url="https://github.com", report_url=lambda r: None)
    alert = bisection_alert(
        found, web_url="https://github.com", report_url=lambda r: None, run_report=None
    )
    for text in (markdown, alert.body):
        assert "@team" not in text and "@octocat" not in text
        assert "](https://evil.example)" not in text
    assert "\\*\\*now\\*\\*" in markdown


def test_push_from_refuses_what_it_cannot_push_before_any_stack_starts(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=ci@example.com", "-c", "user.name=ci",
         "commit", "-qm", "a"],
        check=True,
    )  # fmt: skip
    suite = ROOT / "infra" / "suites" / "local.yaml"
    with pytest.raises(DistkpiError, match="--push-from pushes one commit: not with --commits"):
        run_local(suite, tmp_path / "out", source=repo, commits=2, push_from="HEAD")
    with pytest.raises(DistkpiError, match="nope is not a commit of"):
        run_local(suite, tmp_path / "out", source=repo, push_from="nope")
    assert not (tmp_path / "out").exists()
