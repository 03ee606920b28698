"""The torchrun suite of the own-benchmark tutorial through `distkpi local`: a script of
one's own started by the environment's `torchrun` (a console script), its KPIs read with the
suite's own patterns. As root in a clone other users cannot enter, the code's user runs the
environment's readable twin (local/codeenv.py); its torchrun failed there with
`Permission denied`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from distkpi_cli.local.demo import run_local
from tests.conftest import git
from tests.e2e.test_local import commit_all

pytestmark = pytest.mark.e2e

SUITE = """
name: mymodel
command: [torchrun, "--nnodes=${NNODES}", "--node_rank=${NODE_RANK}",
          "--nproc_per_node=${NPROC_PER_NODE}", "--master_addr=${MASTER_ADDR}",
          "--master_port=${MASTER_PORT}", train.py]
target_accuracy: 0.9
accuracy_pass: 1
accuracy_tolerance: 0.2
metrics:
  throughput: {pattern: 'ips: (?P<value>[0-9.]+) images/sec', per: process}
  test_accuracy: {pattern: 'top1: (?P<value>[0-9.]+)'}
verdict:
  default_tolerance: 0.9
configs:
  - {name: 1x2, trainers: 1, gpus_per_trainer: 2, pservers: 0, batch_size: 64}
"""
# a DDP-style script of one's own: two processes over gloo, a line per step and an eval
TRAIN = """\
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
x, w = torch.randn(512, 64), torch.zeros(64, 10, requires_grad=True)
for step in range(5):
    started = time.perf_counter()
    (x @ w).square().mean().backward()
    dist.all_reduce(w.grad)
    print(f"step {step} ips: {512 / (time.perf_counter() - started):.1f} images/sec", flush=True)
print(f"rank {dist.get_rank()} eval top1: 0.95", flush=True)
dist.destroy_process_group()
"""


def test_the_readmes_torchrun_suite_runs_with_the_environments_torchrun(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    git(repo, "init", "-q", "--initial-branch=main")
    commit_all(repo, "train.py")
    (tmp_path / "suite.yaml").write_text(SUITE)
    result = run_local(
        tmp_path / "suite.yaml", tmp_path / "out", source=repo, progress=io.StringIO()
    )
    (run,) = result.to_json()["runs"]
    cfg = run["configs"]["1x2"]
    assert cfg["status"] == "ok", cfg["problems"]
    assert result.runs[0].state in ("success", "failure") and result.ok
    assert cfg["throughput"] > 0 and cfg["test_accuracy"] == 0.95
    log = (result.runs[0].folder / "1x2" / "logs" / "trainer-0.log").read_text()
    assert "rank 0 eval top1: 0.95" in log and "rank 1 eval top1: 0.95" in log
    # the collector parses such a suite's logs by design: no problem says so
    assert not any("parse settings" in p for p in cfg["problems"])
