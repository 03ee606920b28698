"""A paired suite through `distkpi local`: both commits checked out, set up and run in turn
on the same (local) nodes, the collector's looks deciding after each pair, the verdict by
the pairs.

The repository has three commits: a base, a commit that changes no code (its A and B run
the same code: an A/A run), and a head whose benchmark is slower by a known factor. Both are
pushed to develop, each paired with its first parent. The benchmark is a real process in a
real checkout, built by the suite's setup, but it prints the throughput its commit's
speed.txt names rather than measuring it: a verdict on seconds-long CPU runs of a shared
machine would test the machine's noise, not the looks (`make demo`'s suites train for real;
the verdicts page shows a paired run of infra/suites/local-paired.yaml). With no paired history yet,
the verdict falls back to the suite's tolerance, and says so."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from distkpi_cli.local.demo import run_local
from distkpi_cli.local.state import StateFolder
from tests.conftest import git
from tests.e2e.test_local import BENCH, SPEED, commit_all
from tests.unit.test_cli_kpis import schema

pytestmark = pytest.mark.e2e

PAIRED = (
    SPEED.replace("name: speed\n", "name: speed-paired\n")
    + """verdict:
  enforced: [throughput]
  default_tolerance: 0.15
  paired: {max_pairs: 3, warmup: true}
"""
)


def test_an_unchanged_commit_stops_after_one_pair_and_a_slower_one_fails_after_two(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / "bench.py").write_text(BENCH)
    (repo / "speed.txt").write_text("100\n")
    commit_all(repo, "the base")
    (repo / "CHANGES").write_text("docs only\n")
    same = commit_all(repo, "a change that runs the same code")
    (repo / "speed.txt").write_text("75\n")
    slower = commit_all(repo, "25% slower")
    suite = tmp_path / "speed-paired.yaml"
    suite.write_text(PAIRED)

    state = tmp_path / "state"
    result = run_local(
        suite,
        tmp_path / "out",
        source=repo,
        commits=2,
        progress=io.StringIO(),
        state=StateFolder(state),
    )

    aa, slow = result.runs
    out = result.to_json()["runs"]
    for shown in out:
        jsonschema.validate(shown, schema("kpis.schema.json"))
    assert (out[0]["sha"], out[1]["sha"]) == (same, slower)
    assert out[1]["base_sha"] == same  # a push is paired with its first parent
    # A/A: the same code in both arms is within the tolerance at the first look, and stops
    assert aa.state == "success", aa.description
    assert len(aa.kpis.config("1x1").pairs) == 1
    assert "pairs 1" in aa.description
    decision = json.loads((aa.folder / "1x1" / "pair-1" / "decision.json").read_text())
    assert (decision["decision"], decision["outcome"]) == ("stop", "pass")
    # the slower head: beyond the tolerance at look 1 (which never fails), so a second pair
    # runs, and the second look fails it; a third pair never runs
    assert slow.state == "failure", slow.description
    pairs = slow.kpis.config("1x1").pairs
    assert len(pairs) == 2
    assert [(p.a.throughput, p.b.throughput) for p in pairs] == [(100.0, 75.0)] * 2
    looks = [json.loads((slow.folder / "1x1" / f"pair-{p}" / "decision.json").read_text())
             for p in (1, 2)]  # fmt: skip
    assert [(d["decision"], d.get("outcome")) for d in looks] == [
        ("continue", None),
        ("stop", "fail"),
    ]
    assert not (slow.folder / "1x1" / "pair-3").exists()
    assert (slow.folder / "1x1" / "warmup" / "logs" / "trainer-0.log").exists()
    (throughput,) = [j for j in slow.judgements if j.kpi == "throughput"]
    assert throughput.verdict.value == "regressed" and throughput.runs == 2
    assert "fewer than" in throughput.why  # no paired history yet: judged by the tolerance

    # `distkpi kpis` and `distkpi judge` read the folder as the collector did
    kpis = _cli("kpis", str(slow.folder), "--json")
    assert json.loads(kpis.stdout)["configs"]["1x1"]["pairs"][1]["pair"] == 2
    history = tmp_path / "history.csv"
    rows = _cli("history", "--local", "--state", str(state), "--repo", "local/demo",
                "--model", "speed-paired", "--format", "csv")  # fmt: skip
    history.write_text(rows.stdout)
    assert "paired_d" in rows.stdout.splitlines()[0]
    judged = _cli("judge", str(slow.folder), "--history", str(history), "--suite", str(suite))
    assert judged.stdout.strip().splitlines()[-1].startswith("failure:")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "distkpi_cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done
