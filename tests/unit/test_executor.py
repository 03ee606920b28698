"""The local executor ends jobs as AWS Batch does: with the main node, or a failed node."""

from __future__ import annotations

import json
from pathlib import Path

from distkpi.adapters.batch import WITHHELD_KEY, BatchLauncher, without_key
from distkpi.domain.planning.jobs import plan_jobs, run_spec_for
from distkpi.domain.planning.suites import load_suite
from distkpi.domain.signing import ManifestKeys, config_key
from distkpi_cli.local.executor import Executor, JobOutcome, LocalJob, job_from_request
from tests.unit.test_planning import ROOT, TRIGGER

SUITE = load_suite(ROOT / "infra" / "suites" / "local.yaml")

# node 0 and node 1 each run this, told apart by AWS_BATCH_JOB_NODE_INDEX
SCRIPT = (
    "import os, sys, time\n"
    "node = int(os.environ['AWS_BATCH_JOB_NODE_INDEX'])\n"
    "plan = dict(p.split('=') for p in os.environ['PLAN'].split(','))\n"
    "action, arg = plan[str(node)].split(':')\n"
    "time.sleep(float(arg)) if action == 'sleep' else sys.exit(int(arg))\n"
)


def job(plan: str) -> LocalJob:
    env = {"PLAN": plan}
    return LocalJob("job-1", "distkpi-run-2x1", "2x1", 2, (env, env), ("python", "-c", SCRIPT))


def run(tmp_path: Path, plan: str) -> tuple[bool, str | None, list[int | None]]:
    outcome = Executor(tmp_path, tmp_path / "work", {}).run(job(plan), tick=lambda: None)
    return outcome.failed, outcome.reason, outcome.exit_codes


def test_the_job_ends_when_its_main_node_exits_and_takes_the_main_nodes_status(
    tmp_path: Path,
) -> None:
    failed, reason, codes = run(tmp_path, "0=exit:0,1=sleep:60")
    assert not failed and reason is None
    assert codes[0] == 0 and codes[1] != 0  # the child was stopped, as Batch stops it


def test_a_failing_node_fails_the_job_and_stops_the_others(tmp_path: Path) -> None:
    failed, reason, codes = run(tmp_path, "0=sleep:60,1=exit:3")
    assert failed and reason == "node 1 exited with code 3"
    assert codes[1] == 3 and codes[0] != 0


# each node writes into its work dir, as a checkout does
CHECKOUT = "import pathlib, sys; pathlib.Path('checkout.txt').write_text('x'); sys.exit(CODE)"


def run_of(tmp_path: Path, code: int) -> tuple[Executor, JobOutcome]:
    env = {"DISTKPI_RUN_ID": "local-abc-1"}
    script = ("python", "-c", CHECKOUT.replace("CODE", str(code)))
    executor = Executor(tmp_path, tmp_path / "work", {})
    outcome = executor.run(LocalJob("job-1", "distkpi-1x1", "1x1", 1, (env,), script), lambda: 0)
    assert (executor.run_dir("local-abc-1") / "1x1" / "node-0" / "checkout.txt").exists()
    return executor, outcome


def test_a_runs_work_dirs_are_removed_when_it_ends(tmp_path: Path) -> None:
    executor, outcome = run_of(tmp_path, 0)
    said = executor.end_run("local-abc-1", [outcome], keep=False)
    work = tmp_path.resolve() / "work" / "local-abc-1"
    assert said == f"work dirs of local-abc-1 removed ({work}; --keep-work keeps them)"
    assert not work.exists()
    assert executor.end_run("local-abc-1", [outcome], keep=False) is None


def test_they_are_kept_when_asked_or_when_a_node_failed(tmp_path: Path) -> None:
    executor, outcome = run_of(tmp_path, 0)
    work = executor.run_dir("local-abc-1")
    assert executor.end_run("local-abc-1", [outcome], keep=True) == (
        f"work dirs of local-abc-1 kept (--keep-work): {work}"
    )
    executor, failed = run_of(tmp_path, 3)
    assert executor.end_run("local-abc-1", [failed], keep=False) == (
        f"work dirs of local-abc-1 kept, as a node failed: {work}"
    )
    assert (work / "1x1" / "node-0" / "checkout.txt").exists()


def test_each_node_gets_its_configs_key_in_place_of_the_one_the_stored_request_withholds(
    tmp_path: Path,
) -> None:
    # the request as the launcher stored it: the key withheld, as in the JOB# item
    request = BatchLauncher("q", "single", "multi").request(
        plan_jobs(run_spec_for("r1", TRIGGER, SUITE), SUITE, "b", {"1x1": "k" * 64})[0]
    )
    stored = without_key(request)
    local = job_from_request("job-1", "1x1", stored, ["distkpi", "node"])
    assert local.node_env[0]["DISTKPI_MANIFEST_KEY"] == WITHHELD_KEY
    keys = ManifestKeys(lambda: "the stack's master secret")
    executor = Executor(tmp_path, tmp_path / "work", {}, keys=keys.for_config)
    env = executor._node_env(local, 0)
    assert env["DISTKPI_MANIFEST_KEY"] == config_key("the stack's master secret", "r1", "1x1")
    assert "k" * 64 not in json.dumps(stored)
