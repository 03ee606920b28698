"""What only the real parts show of a bisection: the compare's commits as the stand-in serves
them from a real git repository through the real adapter (a merge one step of the line),
bisections in DynamoDB (created once, each save conditional on the revision read, listed by a
Query), and `distkpi bisections`, `distkpi regressions` and `distkpi history` reading them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository
from distkpi.adapters.dynamo.bisections import BisectionRepository
from distkpi.adapters.dynamo.regressions import RegressionRepository
from distkpi.adapters.github import GitHubStatusClient
from distkpi.domain.bisect.deciding import Ends, Side
from distkpi.domain.bisect.line import first_parent_line
from distkpi.domain.bisect.plan import Bisection, BisectState, Step
from distkpi.domain.records import SeriesRecord
from distkpi.domain.regressions import Regression
from distkpi_cli.local.github_standin import GitHubStandIn
from distkpi_cli.main import main
from tests.conftest import git
from tests.integration.conftest import TABLE, Stack
from tests.integration.test_history import MODEL, REPO, seed_history
from tests.integration.test_paired_base import commit


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """good - a - merge(feature: f1 - f2) - b on develop."""
    repo = tmp_path_factory.mktemp("repository")
    git(repo, "init", "-q", "-b", "develop")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    shas = {"good": commit(repo, "README.md", "root\n"), "a": commit(repo, "a.txt", "a\n")}
    git(repo, "checkout", "-q", "-b", "feature")
    shas["f1"] = commit(repo, "f1.txt", "f1\n")
    shas["f2"] = commit(repo, "f2.txt", "f2\n")
    git(repo, "checkout", "-q", "develop")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature\n\nTwo commits.", "feature")
    shas["merge"] = git(repo, "rev-parse", "HEAD")
    shas["b"] = commit(repo, "b.txt", "b\n")
    shas["path"] = str(repo)
    return shas


@pytest.fixture
def client(repository: dict[str, str]) -> Iterator[GitHubStatusClient]:
    standin = GitHubStandIn(token="t0ken", repository=Path(repository["path"]))
    standin.start()
    yield GitHubStatusClient(standin.url, lambda repo: "t0ken", retries=0)
    standin.stop()


def test_the_line_from_the_stand_in_s_compare_is_git_s_first_parent_line(
    repository: dict[str, str], client: GitHubStatusClient
) -> None:
    commits = client.compare_commits(REPO, repository["good"], repository["b"])
    assert len(commits) == 5  # a, f1, f2, the merge and b: every commit of the range
    line = first_parent_line(commits, repository["good"], repository["b"])
    assert isinstance(line, tuple)
    span = f"{repository['good']}..{repository['b']}"
    expected = git(Path(repository["path"]), "rev-list", "--first-parent", "--reverse", span)
    assert [c.sha for c in line] == [repository["a"], repository["merge"], repository["b"]]
    assert [c.sha for c in line] == expected.split()
    assert (line[1].author, line[1].title) == ("Dev", "merge feature")


def bisection(bad_run: str, created_at: str, **changes: object) -> Bisection:
    stored = Bisection(
        repo=REPO,
        branch="develop",
        model=MODEL,
        bad_run_id=bad_run,
        good=f"{5:040x}",
        bad=f"{9:040x}",
        configs=("4x8-8ps",),
        line=(),
        ends=(Ends("4x8-8ps", "throughput", 2400.0, 1680.0, (2400.0, 2410.5, 2390.25)),),
        max_runs=2,
        created_at=created_at,
    )
    return replace(stored, **changes)  # type: ignore[arg-type]


def test_bisections_are_created_once_saved_by_revision_and_listed_by_key(stack: Stack) -> None:
    del stack
    repository = BisectionRepository(DynamoTable(TABLE))
    first = bisection("push-9", "2026-10-01T09:00:00")
    assert repository.create(first)
    assert not repository.create(first)
    step = Step(f"{7:040x}", "push-9-b1", Side.BAD, 1.25, {"4x8-8ps/throughput": 1690.5})
    moved = replace(first, steps=(step,))
    assert repository.save(moved)
    assert not repository.save(moved)  # a second finisher read the same revision
    stored = repository.get(REPO, "develop", MODEL, "push-9")
    assert stored is not None and stored.steps == (step,) and stored.revision == 1
    assert stored.ends == first.ends
    repository.create(bisection("push-3", "2026-10-01T03:00:00"))
    assert [b.bad_run_id for b in repository.of_branch(REPO, "develop", MODEL)] == [
        "push-3",
        "push-9",
    ]
    assert repository.of_branch(REPO, "main", MODEL) == []


def test_the_cli_lists_bisections_and_history_marks_the_culprit(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_history(stack, 10)
    HistoryRepository(DynamoTable(TABLE)).record_series(
        SeriesRecord(REPO, "develop", MODEL, "push-9", "failure", "slower", "2026-10-01T09:00")
    )
    culprit = f"{7:040x}"
    found = bisection(
        "push-9",
        "2026-10-01T09:00:00",
        steps=(
            Step(culprit, "push-9-b1", Side.BAD, 1.25),
            Step(f"{6:040x}", "push-9-b2", Side.GOOD, 1.5),
        ),
        state=BisectState.FOUND,
        culprit=culprit,
        why="0000000000 is bad and its parent good",
    )
    repository = BisectionRepository(DynamoTable(TABLE))
    repository.create(found)
    assert main(["bisections", "--repo", REPO, "--table", TABLE, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["culprit"] == culprit and listed["state"] == "found"
    assert listed["good"] == f"{5:040x}" and listed["bad"] == f"{9:040x}"
    assert listed["configs"] == ["4x8-8ps"] and listed["gpu_hours"] == 2.75
    assert [(s["sha"], s["run_id"], s["side"]) for s in listed["steps"]] == [
        (culprit, "push-9-b1", "bad"),
        (f"{6:040x}", "push-9-b2", "good"),
    ]
    assert main(["bisections", "--model", "other", "--table", TABLE]) == 0
    assert capsys.readouterr().out == "no bisections\n"
    history = ["history", "--repo", REPO, "--model", MODEL, "--table", TABLE, "--format", "csv"]
    assert main([*history, "--kpi", "throughput"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",paired_d,calibration,layout,culprit")
    marked = [line for line in lines[1:] if line.split(",")[6] == "push-9"]
    assert len(marked) == 4 and all(line.endswith(f",{culprit}") for line in marked)
    assert all(line.endswith(",") for line in lines[1:] if line not in marked)


def test_the_cli_lists_regressions_as_it_lists_bisections(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    del stack
    HistoryRepository(DynamoTable(TABLE)).record_series(
        SeriesRecord(REPO, "develop", MODEL, "push-9", "failure", "slower", "2026-10-01T09:00")
    )
    opened = Regression(
        REPO, "develop", MODEL, "4x8-8ps", "throughput", "push-9", "9" * 40,
        "2026-10-01T09:00:00", 1800.0, 2400.0, 2300.0, 2500.0,
    )  # fmt: skip
    RegressionRepository(DynamoTable(TABLE)).create(opened)

    assert main(["regressions", "--repo", REPO, "--table", TABLE]) == 0
    assert capsys.readouterr().out == (
        f"2026-10-01T09:00:00  open         push-9:4x8-8ps:throughput  {REPO} develop  "
        f"4x8-8ps throughput 1800 (was 2300..2500) at 9999999999\n"
    )
    assert main(["regressions", "--table", TABLE, "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [opened.id]
    assert main(["regressions", "--state", "fixed", "--table", TABLE]) == 0
    assert capsys.readouterr().out == "no regressions\n"
