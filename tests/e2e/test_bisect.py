"""A bisection through `distkpi local --push-from`: a generated repository whose benchmark
slows down at a known commit, its base judged `success` on the local history first, then
four commits pushed at once. The benchmark is a real process in a real checkout of each
step's commit, but it prints the throughput its commit's speed.txt names (test_local.py's speed
benchmark), so the steps' sides are the commits' and not this shared machine's noise."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from distkpi_cli.local.demo import run_local
from distkpi_cli.local.state import StateFolder
from tests.conftest import git
from tests.e2e.test_local import BENCH, SPEED, commit_all

# a minute or more of real training: `make slow`, which CI runs beside `make test`
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUITE = SPEED + "verdict: {enforced: [throughput], default_tolerance: 0.15}\n"


def test_a_push_of_four_commits_is_bisected_to_the_one_that_slowed_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / "bench.py").write_text(BENCH)
    (repo / "speed.txt").write_text("100\n")
    base = commit_all(repo, "the base")
    (repo / "NOTES").write_text("one\n")
    first = commit_all(repo, "notes")
    (repo / "speed.txt").write_text("75\n")
    culprit = commit_all(repo, "25% slower")
    (repo / "NOTES").write_text("two\n")
    commit_all(repo, "more notes")
    (repo / "NOTES").write_text("three\n")
    head = commit_all(repo, "yet more notes")
    suite = tmp_path / "speed.yaml"
    suite.write_text(SUITE)
    state = StateFolder(tmp_path / "state")

    judged = run_local(
        suite, tmp_path / "out", base, source=repo, progress=io.StringIO(), state=state
    )
    assert [r.state for r in judged.runs] == ["success"]
    assert judged.bisections is None

    result = run_local(
        suite,
        tmp_path / "out",
        head,
        source=repo,
        progress=io.StringIO(),
        state=state,
        push_from=base,
    )

    (run,) = result.runs
    assert run.state == "failure", run.description
    (bisection,) = result.to_json()["bisections"]
    assert {k: bisection[k] for k in ("good", "bad", "culprit", "state", "configs")} == {
        "good": base,
        "bad": head,
        "culprit": culprit,
        "state": "found",
        "configs": ["1x1"],
    }
    # 4 commits: the midpoint (the culprit, bad), then the one before it (good)
    assert [(s["sha"], s["side"]) for s in bisection["steps"]] == [
        (culprit, "bad"),
        (first, "good"),
    ]
    assert [s["run_id"] for s in bisection["steps"]] == [f"{run.run_id}-b1", f"{run.run_id}-b2"]
    assert bisection["gpu_hours"] == sum(s["gpu_hours"] for s in bisection["steps"]) > 0
    # the steps posted nothing to GitHub: only the pushed heads have statuses
    assert {s["sha"] for s in result.statuses} <= {base, head}

    listed = subprocess.run(
        [sys.executable, "-m", "distkpi_cli.main", "bisections", "--local", "--state",
         str(tmp_path / "state"), "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert '"culprit": "' + culprit in listed.stdout
