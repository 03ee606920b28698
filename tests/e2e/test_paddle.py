"""The Paddle suite's smallest config through `distkpi local`: real PaddlePaddle training in
the suite's own pinned environment (made once per machine by its setup, then kept)."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

import pytest

from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.local.codeenv import code_bin, reachable_cache
from distkpi_cli.local.demo import run_local
from distkpi_cli.localfs import LocalRunSource
from tests.e2e.test_local import ROOT, repository

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cache() -> Path:
    """A cache folder holding the suite's pinned environment, made here once, where every
    node's user can reach it: each node has a home of its own, in which the suite's setup
    would make the environment again (about 25 s) at every run. out/cache, unless the clone
    is where they cannot enter (as root under a folder of mode 700)."""
    given = os.environ.get("DISTKPI_CACHE_DIR")
    folder = Path(given).resolve() if given else reachable_cache(ROOT / "out" / "cache")
    folder.mkdir(parents=True, exist_ok=True)
    python = Path(code_bin()) / "python"  # the Python the nodes' code runs
    made = subprocess.run(
        [str(python), "infra/job/paddle/env.py", "setup", "cpu"],
        cwd=ROOT,
        env={**os.environ, "DISTKPI_CACHE_DIR": str(folder)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    for lock in (folder / "envs").glob("*.lock"):
        lock.chmod(0o666)  # each node's setup takes the lock as a user of its own
    return folder


# a model a tenth the size: these tests check that Paddle's training goes through the stack
SMALLER = '"--features", "256", "--hidden", "512"'


def smallest(tmp_path: Path, cache: Path, command_wrapper: str | None = None) -> Path:
    """infra/suites/paddle.yaml with its 1x1 config only, on a smaller training set, its
    setup and command given the environment in ``cache``."""
    text = (ROOT / "infra" / "suites" / "paddle.yaml").read_text()
    text = re.sub(r"\n  - \{name: (1x2|2x1-2ps),.*", "", text)
    text = text.replace('"--features", "1024", "--hidden", "1536"', SMALLER)
    text = text.replace('"--repeat", "8"', '"--repeat", "2"').replace(
        "accuracy_pass: 2", "accuracy_pass: 1"
    )
    if command_wrapper:  # a launcher that exits 0 whatever its worker did
        text = re.sub(
            r"command: \[(.*?)\]",
            lambda m: f'command: ["sh", "-c", "{command_wrapper}"]',
            text,
            flags=re.S,
        )
    in_cache = f'"env", "DISTKPI_CACHE_DIR={cache}", '
    text = text.replace("setup: [[", f"setup: [[{in_cache}").replace(
        "command: [", f"command: [{in_cache}"
    )
    path = tmp_path / "paddle.yaml"
    path.write_text(text)
    return path


def test_the_smallest_paddle_config_from_webhook_to_verdict(tmp_path: Path, cache: Path) -> None:
    result = run_local(
        smallest(tmp_path, cache),
        tmp_path / "out",
        source=repository(tmp_path),
        progress=io.StringIO(),
    )
    (run,) = result.to_json()["runs"]
    cfg = run["configs"]["1x1"]
    assert cfg["status"] == "ok", cfg["problems"]
    assert result.runs[0].state == "success" and result.ok
    assert cfg["throughput"] > 0 and cfg["speedup"] == 1.0
    assert cfg["test_accuracy"] > 0.9 and cfg["time_to_accuracy_s"] is not None
    # the uploaded log is Paddle's own, with no environment in it
    log = (result.runs[0].folder / "1x1" / "logs" / "trainer-0.log").read_text()
    assert re.search(r"Pass = 1, Training performance = [0-9.]+ imgs/s, Train accuracy = ", log)
    assert "kpis\ttrain_speed\t" in log
    for uploaded in (result.runs[0].folder / "1x1").rglob("*"):
        if uploaded.is_file():
            text = uploaded.read_text(errors="replace")
            assert "AWS_SECRET_ACCESS_KEY" not in text and "environ(" not in text
    # `distkpi kpis` on the folder gives what the collector stored
    assert compute_run_kpis(LocalRunSource(result.runs[0].folder)).to_json() == run


def test_a_crashed_trainer_fails_its_config_though_its_launcher_exits_0(
    tmp_path: Path, cache: Path
) -> None:
    wrapper = (
        "python infra/job/paddle/env.py run cpu infra/job/paddle/bench.py"
        " --features 256 --hidden 512 --repeat 2; exit 0"
    )
    result = run_local(
        smallest(tmp_path, cache, wrapper),
        tmp_path / "out",
        source=repository(tmp_path),
        faults={("1x1", 0): 0},
        progress=io.StringIO(),
    )
    cfg = result.to_json()["runs"][0]["configs"]["1x1"]
    assert result.statuses[-1]["state"] == "error"
    assert cfg["status"] == "failed"
    cause = "RuntimeError: injected failure after pass 0 (DISTKPI_FAIL_AT_EPOCH)"
    assert (
        f"trainer 0 (logs/trainer-0.log) crashed: {cause} (the end of a Python traceback)"
        in (cfg["problems"])
    )
    assert not any("exited with code" in p for p in cfg["problems"])  # the node exited 0
