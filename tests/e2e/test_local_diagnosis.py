"""A regression's diagnosis job through `distkpi local`: a generated repository whose head
adds an all-reduce of 64 MB to every step of a real data-parallel training (2 gloo workers,
tests/e2e/profiled_training.py), pushed after an unchanged commit. The head's run fails,
its diagnosis job profiles the base and the head one after the other in one job, and the
run's diagnosis names communication; the unchanged commit's run gets no diagnosis job.
The benchmark prints the throughput its commit's speed.txt names (as test_bisect.py's),
so that the verdicts are the commits' and not this shared machine's noise; the profiled
training is real."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from distkpi_cli.local.demo import run_local
from tests.conftest import git
from tests.e2e.test_local import SPEED, commit_all

# minutes of real training: `make slow`, which CI runs beside `make test`
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TRAINING = Path(__file__).with_name("profiled_training.py")
SUITE = SPEED.replace('setup: [["sh", "-c", "cp speed.txt built.txt"]]\n', "") + (
    "verdict: {enforced: [throughput], default_tolerance: 0.15}\n"
    "diagnose: {on: regression, steps: 3}\n"
)
# the benchmark: its commit's throughput, and, in a diagnosis job, its commit's training
# profiled into DISTKPI_PROFILE_DIR
BENCH = """
import os, pathlib, socket, subprocess, sys
speed = pathlib.Path("speed.txt").read_text().strip()
if os.environ.get("DISTKPI_PROFILE_DIR"):
    variant = pathlib.Path("variant.txt").read_text().strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([sys.executable, "train.py", variant, str(port)], check=True)
for n in range(3):
    print(f"Pass = {n}, Training performance = {speed} imgs/s, Test accuracy = 0.9")
"""


def test_a_head_with_an_extra_all_reduce_is_diagnosed_as_communication(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / "bench.py").write_text(BENCH)
    shutil.copy(TRAINING, repo / "train.py")
    (repo / "speed.txt").write_text("100\n")
    (repo / "variant.txt").write_text("base\n")
    commit_all(repo, "the base")
    (repo / "NOTES").write_text("unchanged code\n")
    commit_all(repo, "notes only")
    (repo / "speed.txt").write_text("75\n")
    (repo / "variant.txt").write_text("comm\n")  # one more all_reduce per step
    head = commit_all(repo, "an all_reduce more per step")
    suite = tmp_path / "speed.yaml"
    suite.write_text(SUITE)

    result = run_local(
        suite, tmp_path / "out", head, source=repo, commits=3, progress=io.StringIO()
    )

    assert [r.state for r in result.runs] == ["success", "success", "failure"]
    unchanged, slowed = result.runs[1], result.runs[2]
    jobs = {j.run_id for j in result.jobs}
    assert f"{unchanged.run_id}-d" not in jobs and unchanged.diagnoses == {}
    assert f"{slowed.run_id}-d" in jobs
    diagnosis = result.to_json()["runs"][2]["configs"]["1x1"]["diagnosis"]
    assert diagnosis["largest_change"] == "communication", diagnosis["line"]
    assert diagnosis["head_sha"] == head and diagnosis["steps"] == 3
    assert diagnosis["base_sha"] == git(repo, "rev-parse", "HEAD~1")
    trainer = diagnosis["roles"]["trainer"]
    assert trainer["base"]["ranks"] == trainer["head"]["ranks"] == 2
    calls = trainer["head"]["collectives"]["all_reduce"]["count"]
    assert calls == trainer["base"]["collectives"]["all_reduce"]["count"] + 1
    assert diagnosis["line"].startswith("communication +")
    assert diagnosis["gpu_hours"] > 0 and diagnosis["problems"] == []
    # stored in the run's folder, as `distkpi kpis --json` reads it, and in its report
    stored = json.loads((slowed.folder / "1x1" / "diagnosis.json").read_text())
    assert stored == diagnosis
    assert "Why it changed: profiled base and head" in slowed.report.read_text()
    sizes = [t["bytes"] for side in ("base", "head") for t in diagnosis["traces"][side]["trainer"]]
    print(
        f"trace bytes: {sizes}; diagnosis job {diagnosis['gpu_hours']:.4g} GPU-hours, "
        f"its run {slowed.kpis.gpu_hours:.4g}"
    )
