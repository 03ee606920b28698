"""Runs the jobs the webhook submitted as local processes, as Batch would run them: each node
runs the job's command (`distkpi node`), which checks out the commit under test from the
local repository, runs the suite's setup and command, and uploads to the local stack.

moto's Batch accepts jobs but runs nothing and keeps no node overrides, so the job list
comes from Batch and each job's exact request (nodes, roles, environment, command) from
the job record the launcher wrote next to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distkpi.adapters.batch import KEY_VARIABLE, WITHHELD_KEY
from distkpi.domain.logs.logformats import parse_log
from distkpi.domain.logs.readers.classic import MAX_CAUSE_CHARS
from distkpi.domain.planning import jobenv
from distkpi.domain.untrusted import neutral
from distkpi_cli.local.codeenv import code_bin
from distkpi_cli.node.hardware import LOCAL

NODE_TIMEOUT_S = 900
NODE_SAYS = "distkpi node: "  # how the node runner's own lines start


def crash_cause(output: Path) -> str | None:
    """Why a node failed, from what it printed: the last line of the code's traceback or
    Paddle's error summary, else the node's own problem (`distkpi node: ...`); neutral, as
    any string from a log is."""
    try:
        with output.open("rb") as stream:
            cause = parse_log(stream).crash_cause
        if cause is None:
            said = [
                line
                for line in output.read_text(errors="replace").splitlines()
                if line.startswith(NODE_SAYS)
            ]
            cause = said[-1].removeprefix(NODE_SAYS) if said else None
    except OSError:
        return None
    return neutral(cause[:MAX_CAUSE_CHARS]) if cause else None


@dataclass(frozen=True)
class LocalJob:
    job_id: str
    name: str
    config: str
    nodes: int
    node_env: tuple[dict[str, str], ...]
    command: tuple[str, ...]


@dataclass
class JobOutcome:
    job: LocalJob
    exit_codes: list[int | None] = field(default_factory=list)
    seconds: float = 0.0
    reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.reason is not None

    @property
    def run_id(self) -> str:
        return _run_of(self.job)


def _run_of(job: LocalJob) -> str:
    return job.node_env[0].get(jobenv.RUN_ID, "run") if job.node_env else "run"


def _env_list(items: list[dict[str, str]]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in items}


def job_from_request(
    job_id: str, config: str, request: Mapping[str, Any], default_command: list[str]
) -> LocalJob:
    overrides = request.get("nodeOverrides")
    if not overrides:
        container = request.get("containerOverrides", {})
        env = _env_list(container.get("environment", []))
        return LocalJob(
            job_id,
            request["jobName"],
            config,
            1,
            (env,),
            tuple(container.get("command") or default_command),
        )
    nodes = int(overrides["numNodes"])
    per_node: list[dict[str, str]] = [{} for _ in range(nodes)]
    command: list[str] = default_command
    for group in overrides["nodePropertyOverrides"]:
        first, _, last = group["targetNodes"].partition(":")
        stop = int(last) if last else nodes - 1
        container = group.get("containerOverrides", {})
        command = container.get("command") or command
        for node in range(int(first or 0), stop + 1):
            per_node[node] = _env_list(container.get("environment", []))
    return LocalJob(job_id, request["jobName"], config, nodes, tuple(per_node), tuple(command))


@dataclass
class Executor:
    source: Path | None  # the repository the nodes clone, standing in for the suite's URL
    workdir: Path
    base_env: dict[str, str]
    faults: dict[tuple[str, int], int] = field(default_factory=dict)
    # (run, config) -> the config's manifest key, which the stored request withholds and
    # Batch would put in the container's environment
    keys: Callable[[str, str], str] | None = None

    def _command(self, job: LocalJob) -> list[str]:
        """The job's command with this interpreter: `distkpi` as the installed package,
        `python` as this Python (the image's, on Batch)."""
        command = list(job.command)
        if command and command[0] == "distkpi":
            command[:1] = [sys.executable, "-m", "distkpi_cli.main"]
        elif command and command[0] in ("python", "python3"):
            command[0] = sys.executable
        return command

    def run_dir(self, run_id: str) -> Path:
        """Where the nodes of a run's jobs work: a checkout each."""
        return self.workdir.resolve() / run_id

    def end_run(self, run_id: str, outcomes: list[JobOutcome], *, keep: bool) -> str | None:
        """A run's jobs have ended: its node work dirs (a full checkout each, gigabytes for
        a framework's repository) are removed, unless ``keep`` or a node failed. What
        became of them, where, or None when there were none."""
        work = self.run_dir(run_id)
        if not work.exists():
            return None
        if keep:
            return f"work dirs of {run_id} kept (--keep-work): {work}"
        if any(o.failed for o in outcomes):
            return f"work dirs of {run_id} kept, as a node failed: {work}"
        shutil.rmtree(work)
        return f"work dirs of {run_id} removed ({work}; --keep-work keeps them)"

    def _node_dir(self, job: LocalJob, node: int) -> Path:
        return self.run_dir(_run_of(job)) / job.config / f"node-{node}"

    def _node_env(self, job: LocalJob, node: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DISTKPI_")}
        env.update(self.base_env)
        env.update(job.node_env[node])
        env.update(
            {
                "AWS_BATCH_JOB_ID": job.job_id,
                "AWS_BATCH_JOB_NODE_INDEX": str(node),
                "AWS_BATCH_JOB_NUM_NODES": str(job.nodes),
                "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
                jobenv.WORKDIR: str(self._node_dir(job, node)),
                jobenv.NODE_ADDRESS: "127.0.0.1",
                jobenv.INSTANCE_TYPE: LOCAL,  # this machine: no metadata service asked
                "PATH": os.pathsep.join([code_bin(), env.get("PATH", "")]),
                "PYTHONUNBUFFERED": "1",
            }
        )
        if env.get(KEY_VARIABLE) == WITHHELD_KEY and self.keys is not None:
            env[KEY_VARIABLE] = self.keys(env.get(jobenv.RUN_ID, ""), job.config)
        if self.source is not None and env.get(jobenv.SOURCE_URL) != "none":
            env[jobenv.SOURCE_URL] = str(self.source)
        if node:
            env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "127.0.0.1"
        if (job.config, node) in self.faults:
            env[jobenv.FAIL_AT_EPOCH] = str(self.faults[(job.config, node)])
        return env

    def run(self, job: LocalJob, tick: Callable[[], object]) -> JobOutcome:
        """All nodes of the job at once. As on Batch, the job ends when its main node (0)
        exits, stopping the others, and its status is the main node's. A node that fails
        stops the others at once (on Batch they would fail through the collectives they
        share with it, or at the job's timeout)."""
        started = time.monotonic()
        procs = []
        for node in range(job.nodes):
            log = self.workdir / job.config / f"node-{node}.stdout"
            log.parent.mkdir(parents=True, exist_ok=True)
            cwd = self._node_dir(job, node)
            cwd.mkdir(parents=True, exist_ok=True)
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        self._command(job),
                        env=self._node_env(job, node),
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        cwd=cwd,
                    )
                )
        outcome = JobOutcome(job)
        while any(p.poll() is None for p in procs):
            tick()
            codes = [p.poll() for p in procs]
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed and outcome.reason is None:
                outcome.reason = f"node {failed[0]} exited with code {codes[failed[0]]}"
                self._stop(procs)
            elif codes[0] == 0 and None in codes:
                self._stop(procs)
                break
            elif time.monotonic() - started > NODE_TIMEOUT_S:
                outcome.reason = f"timed out after {NODE_TIMEOUT_S}s"
                self._stop(procs)
            time.sleep(0.2)
        outcome.exit_codes = [p.returncode for p in procs]
        if outcome.reason is None and outcome.exit_codes[0] != 0:
            outcome.reason = f"node 0 exited with code {outcome.exit_codes[0]}"
        if outcome.reason is not None and outcome.reason.startswith("node "):
            node = int(outcome.reason.split()[1])
            if cause := crash_cause(self.workdir / job.config / f"node-{node}.stdout"):
                outcome.reason += f": {cause}"
        outcome.seconds = time.monotonic() - started
        return outcome

    @staticmethod
    def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
