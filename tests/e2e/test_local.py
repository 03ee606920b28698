"""`distkpi local` end to end: real training processes, moto's server, a GitHub stand-in."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.local.demo import LocalResult, run_local
from distkpi_cli.localfs import LocalRunSource
from tests.conftest import git
from tests.unit.test_cli_kpis import schema

pytestmark = pytest.mark.e2e

TINY = """
name: tiny
command: ["python", "infra/job/reference.py",
          "--features", "128", "--hidden", "256", "--repeat", "1"]
target_accuracy: 0.6
accuracy_pass: 1
accuracy_tolerance: 0.2
verdict:
  # seconds-long CPU runs are too noisy to judge speed; these tests check the mechanics
  default_tolerance: 0.9
configs:
{configs}
"""
CONFIGS = {
    "1x1": "  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 64}",
    "1x2": "  - {name: 1x2, trainers: 1, gpus_per_trainer: 2, pservers: 0, batch_size: 128}",
    "1x1-1ps": "  - {name: 1x1-1ps, trainers: 1, gpus_per_trainer: 1, pservers: 1, batch_size: 64}",
}


def suite(tmp_path: Path, *names: str) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(configs="\n".join(CONFIGS[n] for n in names)))
    return path


ROOT = Path(__file__).resolve().parents[2]


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def repository(tmp_path: Path, commits: int = 1) -> Path:
    """A repository holding the reference job, with ``commits`` commits on main: the code
    under test, as `distkpi local --repo` measures it."""
    repo = tmp_path / "repo"
    shutil.copytree(
        ROOT / "infra" / "job", repo / "infra" / "job", ignore=shutil.ignore_patterns("__pycache__")
    )
    git(repo, "init", "-q", "--initial-branch=main")
    for n in range(commits):
        (repo / "CHANGES").write_text(f"change {n}\n")
        commit_all(repo, f"change {n}")
    return repo


def test_a_tiny_suite_from_webhook_to_verdict(tmp_path: Path) -> None:
    progress = io.StringIO()
    result = run_local(
        suite(tmp_path, "1x1", "1x2", "1x1-1ps"),
        tmp_path / "out",
        source=repository(tmp_path),
        progress=progress,
    )
    out = result.to_json()
    # a pending, then one final status for the suite
    assert [(s["context"], s["state"]) for s in out["statuses"]] == [
        ("distkpi/tiny", "pending"),
        ("distkpi/tiny", result.runs[0].state),
    ]
    assert result.runs[0].state in ("success", "failure")
    assert result.ok
    (run,) = out["runs"]
    jsonschema.validate(run, schema("kpis.schema.json"))
    configs = run["configs"]
    assert set(configs) == {"1x1", "1x2", "1x1-1ps"}
    for name, cfg in configs.items():
        assert cfg["status"] == "ok", (name, cfg["problems"])
        assert cfg["throughput"] > 0
        assert 0 <= cfg["test_accuracy"] <= 1
        if cfg["time_to_accuracy_s"] is None:
            assert any("never reached" in p for p in cfg["problems"])
        assert cfg["trainer_gpu_memory_mib"] is None  # no GPU here, and nothing pretends
        assert any("peak host RSS" in p for p in cfg["problems"])
    assert configs["1x1"]["speedup"] == 1.0
    assert any(cfg["time_to_accuracy_s"] is not None for cfg in configs.values())
    # the KPIs the collector stored in the table are what the CLI computes from the folder
    again = compute_run_kpis(LocalRunSource(result.runs[0].folder)).to_json()
    assert again == run
    assert "events delivered" in progress.getvalue()


def test_a_crashing_node_gives_an_error_and_a_failed_config(tmp_path: Path) -> None:
    progress = io.StringIO()
    result = run_local(
        suite(tmp_path, "1x1", "1x2"),
        tmp_path / "out",
        source=repository(tmp_path),
        faults={("1x2", 0): 0},
        progress=progress,
    )
    final = result.statuses[-1]
    assert final["state"] == "error"
    assert final["description"].startswith("1x2 failed")
    assert not result.ok
    configs = result.to_json()["runs"][0]["configs"]
    assert configs["1x2"]["status"] == "failed" and configs["1x2"]["throughput"] is None
    assert any("exited with code 1" in p for p in configs["1x2"]["problems"])
    # the console says why, in the code's own words: the last line of its traceback
    cause = "RuntimeError: injected failure after epoch 0 (DISTKPI_FAIL_AT_EPOCH)"
    assert f"1x2: failed: node 0 exited with code 1: {cause} in " in progress.getvalue()
    assert f"crashed: {cause} (the end of a Python traceback)" in " ".join(
        configs["1x2"]["problems"]
    )
    assert configs["1x1"]["status"] == "ok"
    log = (result.runs[0].folder / "1x2" / "logs" / "trainer-0.log").read_text()
    assert "injected failure after epoch 0" in log
    # the job never writes its environment into a log
    assert "AWS_SECRET_ACCESS_KEY" not in log and "DISTKPI_S3_PREFIX" not in log


def test_pushes_build_a_history_the_pull_request_is_judged_against(tmp_path: Path) -> None:
    result = run_local(
        suite(tmp_path, "1x1"),  # 1x2 runs in the tiny suite's test
        tmp_path / "out",
        source=repository(tmp_path, commits=2),
        commits=2,
        progress=io.StringIO(),
        pull_request=True,
    )
    push, pull = result.runs
    assert (push.event, pull.event) == ("push", "pull_request")
    assert push.state == "success", (push.description, [c.problems for c in push.kpis.configs])
    assert [s["state"] for s in result.statuses] == ["pending", push.state, "pending", pull.state]
    judged = {(j.config, j.kpi): j for j in pull.judgements}
    throughput = judged[("1x1", "throughput")]
    assert throughput.baseline == pytest.approx(push.kpis.config("1x1").throughput)
    assert throughput.verdict.value in ("pass", "regressed", "improved")
    assert pull.report.read_text().count("<img") == 2
    # the push is in the history site's files beside the reports; the pull request is not
    api = tmp_path / "out" / "site" / "api"
    (line,) = json.loads((api / "index.json").read_text())["histories"]
    assert (line["repo"], line["branch"], line["latest"]["run_id"]) == (
        "local/demo",
        "develop",
        push.run_id,
    )
    assert json.loads((api / f"runs/{push.run_id}.json").read_text())["verdict"] == push.state
    assert not (api / f"runs/{pull.run_id}.json").exists()
    assert (api / f"runs/{push.run_id}.js").is_file()  # its twin, for the pages on file://
    report = api.parent / json.loads((api / f"runs/{push.run_id}.json").read_text())["report"]
    assert report.resolve() == push.report.resolve()


SPEED = """
name: speed
command: ["python", "bench.py"]
setup: [["sh", "-c", "cp speed.txt built.txt"]]
target_accuracy: 0.5
accuracy_pass: 0
accuracy_tolerance: 0.5
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 8}
"""
BENCH = """
import pathlib
speed = pathlib.Path("built.txt").read_text().strip()
for n in range(3):
    print(f"Pass = {n}, Training performance = {speed} imgs/s, Test accuracy = 0.9")
"""


def test_each_commit_is_measured_from_its_own_code_and_setup(tmp_path: Path) -> None:
    # Given a repository whose benchmark reports what its setup built, at two commits
    repo = tmp_path / "speed"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / "bench.py").write_text(BENCH)
    (repo / "speed.txt").write_text("100\n")
    slow = commit_all(repo, "slow")
    (repo / "speed.txt").write_text("200\n")
    fast = commit_all(repo, "fast")
    (repo / "speed.txt").write_text("999\n")  # the working tree is never measured
    suite_file = tmp_path / "speed.yaml"
    suite_file.write_text(SPEED)
    # When each commit is run
    measured = {}
    for sha in (slow, fast):
        result = run_local(suite_file, tmp_path / sha, sha, source=repo, progress=io.StringIO())
        (run,) = result.runs
        assert run.kpis.config("1x1").status.value == "ok", run.kpis.config("1x1").problems
        measured[sha] = run.kpis.config("1x1").throughput
    # Then each gives its own numbers
    assert measured == {slow: 100.0, fast: 200.0}


def test_a_dry_run_prints_what_a_pull_request_would_submit(tmp_path: Path) -> None:
    from distkpi_cli.local.demo import dry_run

    repo = repository(tmp_path)
    planned = dry_run(
        ROOT / "infra" / "suites" / "resnet50.yaml", source=repo, progress=io.StringIO()
    )
    (run,) = planned["runs"]
    assert run["model"] == "resnet50" and run["sha"] == git(repo, "rev-parse", "HEAD")
    jobs = {job["jobName"].rsplit("-", 1)[-1]: job for job in run["jobs"]}
    assert set(jobs) == {"1x1", "1x8", "4ps", "8ps"}  # 2x8-4ps, 4x8-8ps
    assert jobs["1x1"]["containerOverrides"]["command"] == ["distkpi", "node"]
    assert jobs["8ps"]["nodeOverrides"]["numNodes"] == 12
    assert [s["state"] for s in planned["statuses"]] == ["pending"]
    # the seed's matrix asks for exactly the GPUs it uses, and no pserver for any
    assert run["gpus"] == 57 and run["gpu_hours_estimate"] is None
    for group in jobs["8ps"]["nodeOverrides"]["nodePropertyOverrides"]:
        wanted = {r["type"] for r in group["containerOverrides"]["resourceRequirements"]}
        assert ("GPU" in wanted) == (group["targetNodes"] == "0:3")


def assert_one_check_run_with_the_kpi_table(result: LocalResult, out: Path) -> None:
    """As a GitHub App the run is one check run with the KPI table (checked on the first run of
    test_local_state's history, which runs as an App: a run of training fewer)."""
    answered = result.to_json()
    assert answered["statuses"] == []  # an App answers with check runs
    (check,) = answered["checks"]
    assert set(check) == {"name", "status", "conclusion", "title", "summary"}
    assert (check["name"], check["status"]) == ("distkpi/tiny", "completed")
    assert check["conclusion"] == result.runs[0].state
    assert check["title"] == result.runs[0].description
    # the nodes' checkouts went with the run, which no node failed
    assert (out / "work").is_dir()
    assert not (out / "work" / result.runs[0].run_id).exists()
    assert check["summary"].startswith("| KPI | 1x1 |")
    assert "| hardware | local/cpu |" in check["summary"]
