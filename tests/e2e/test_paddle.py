"""The Paddle suite's smallest config through `distkpi local`: real PaddlePaddle training in
the suite's own pinned environment (made once per machine by its setup, then kept)."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from distkpi.domain.diagnosis.breakdown import reduce_trace
from distkpi.domain.diagnosis.trace import read_trace
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.local.codeenv import code_bin, reachable_cache
from distkpi_cli.local.demo import run_local
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.main import main
from tests.conftest import git
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def profiled_job(cache: Path, traces: Path, hidden: int) -> None:
    """The Paddle suite's command for its 1x2 config (two workers through Paddle's
    launcher), profiled as a diagnosis job asks, on a smaller model ``hidden`` wide."""
    env = {
        **os.environ, "DISTKPI_CACHE_DIR": str(cache), "DISTKPI_GPUS_PER_TRAINER": "2",
        "DISTKPI_BATCH_SIZE": "128", "DISTKPI_EPOCHS": "1", "DISTKPI_PROFILE_DIR": str(traces),
        "DISTKPI_PROFILE_STEPS": "3",
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "infra/job/paddle/env.py", "run", "cpu", "infra/job/paddle/bench.py",
         "--features", "64", "--hidden", str(hidden), "--repeat", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "kpis\ttrain_speed\t" in done.stdout  # it trained to its end


@pytest.mark.slow
def test_the_paddle_job_writes_a_trace_per_rank_that_distkpi_diagnose_reduces(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    profiled_job(cache, run / "base" / "trainer", hidden=64)
    profiled_job(cache, run / "head" / "trainer", hidden=1024)  # a head 16 times as wide

    assert sorted(p.name for p in (run / "base" / "trainer").iterdir()) == [
        "rank-0.json",
        "rank-1.json",
    ]
    assert main(["diagnose", str(run), "--json"]) == 0
    diagnosis = json.loads(capsys.readouterr().out)["diagnosis"]
    assert diagnosis["steps"] == 3
    trainer = diagnosis["roles"]["trainer"]
    assert trainer["base"]["ranks"] == trainer["head"]["ranks"] == 2
    assert trainer["head"]["compute_s"] > trainer["base"]["compute_s"] > 0
    assert diagnosis["largest_change"] == "compute"
    assert [t["file"] for t in diagnosis["traces"]["head"]["trainer"]] == [
        "head/trainer/rank-0.json",
        "head/trainer/rank-1.json",
    ]
    assert main(["diagnose", str(run)]) == 0
    assert ": compute +" in capsys.readouterr().out


@pytest.mark.slow
def test_a_paddle_runs_diagnosis_job_uploads_and_reduces_both_commits_traces(
    tmp_path: Path, cache: Path
) -> None:
    """The whole path: `distkpi local` runs the Paddle suite's diagnosis job (diagnose:
    always) for the second commit, its node uploads both commits' traces, the collector
    reduces them."""
    suite = smallest(tmp_path, cache)
    suite.write_text(suite.read_text() + "diagnose: {on: always, steps: 3}\n")
    repo = repository(tmp_path, commits=2)

    result = run_local(suite, tmp_path / "out", source=repo, commits=2, progress=io.StringIO())

    second = result.runs[1]
    assert f"{second.run_id}-d" in {j.run_id for j in result.jobs}
    diagnosis = result.to_json()["runs"][1]["configs"]["1x1"]["diagnosis"]
    assert diagnosis["problems"] == [] and diagnosis["steps"] == 3
    assert diagnosis["base_sha"] == git(repo, "rev-parse", "HEAD~1")
    assert diagnosis["head_sha"] == git(repo, "rev-parse", "HEAD")
    trainer = diagnosis["roles"]["trainer"]
    assert trainer["base"]["ranks"] == trainer["head"]["ranks"] == 1
    assert trainer["base"]["compute_s"] > 0 and trainer["head"]["compute_s"] > 0
    files = [t["file"] for side in ("base", "head") for t in diagnosis["traces"][side]["trainer"]]
    run = f"runs/{second.run_id}-d/1x1/pair-1"
    assert files == [f"{run}/{arm}/files/trainer-0/profile/rank-0.json" for arm in "ab"]
    assert diagnosis["gpu_hours"] > 0


@pytest.mark.slow
def test_a_parameter_server_trainer_writes_a_trace_that_reduces(
    tmp_path: Path, cache: Path
) -> None:
    """fleet's GEO-SGD mode (a static graph): its trainer profiles its executor's steps."""
    traces = tmp_path / "traces"
    trainer, pserver, gloo = (f"127.0.0.1:{free_port()}" for _ in range(3))
    common = {
        **os.environ, "DISTKPI_CACHE_DIR": str(cache), "DISTKPI_PSERVERS": "1",
        "PADDLE_TRAINERS_NUM": "1", "PADDLE_TRAINER_ENDPOINTS": trainer,
        "PADDLE_PSERVERS_IP_PORT_LIST": pserver, "PADDLE_GLOO_HTTP_ENDPOINT": gloo,
        "POD_IP": "127.0.0.1", "DISTKPI_BATCH_SIZE": "128", "DISTKPI_EPOCHS": "1",
        "DISTKPI_PROFILE_DIR": str(traces), "DISTKPI_PROFILE_STEPS": "3",
    }  # fmt: skip
    job = ROOT / "infra" / "job" / "paddle"
    command = [sys.executable, str(job / "env.py"), "run", "cpu", str(job / "bench.py"),
               "--features", "64", "--hidden", "64", "--repeat", "1"]  # fmt: skip

    def role(name: str, endpoint: str) -> dict[str, str]:
        port = endpoint.rsplit(":", 1)[1]
        own = {"TRAINING_ROLE": name, "PADDLE_CURRENT_ENDPOINT": endpoint, "PADDLE_PORT": port}
        return {**common, **own, **({"PADDLE_TRAINER_ID": "0"} if name == "TRAINER" else {})}

    server = subprocess.Popen(
        command, cwd=tmp_path, env=role("PSERVER", pserver),  # fleet writes http.log there
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=tmp_path, env=role("TRAINER", trainer), capture_output=True, text=True,
            check=False, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert server.wait(timeout=120) == 0  # the trainer stopped it
    finally:
        if server.poll() is None:
            server.kill()
    assert [p.name for p in traces.iterdir()] == ["rank-0.json"]  # the pserver writes none
    r = reduce_trace(read_trace((traces / "rank-0.json").read_bytes()))
    assert r.steps == 3 and r.compute_s > 0 and r.ops["sgd"] > 0
    # GEO-SGD sends its updates from a communicator thread the profiler does not record
    assert r.communication_s == 0
