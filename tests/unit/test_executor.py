"""The local executor ends jobs as AWS Batch does: with the main node, or a failed node."""

from __future__ import annotations

from pathlib import Path

from distkpi_cli.local.executor import Executor, LocalJob

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
