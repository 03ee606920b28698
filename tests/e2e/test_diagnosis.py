"""Real CPU training (2 gloo workers) profiled as the diagnose guide tells, base against a head that
changed one thing: the diagnosis names that thing. And the reference job writes its traces."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from distkpi_cli.diagnosis.breakdown import reduce_trace
from distkpi_cli.diagnosis.folder import diagnose_folder
from distkpi_cli.diagnosis.trace import read_trace
from distkpi_cli.main import main

# minutes of real training or benchmarks: `make slow`, which CI runs beside `make test`
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TRAINING = Path(__file__).with_name("profiled_training.py")
STEPS = 5
# Each head's change (about 0.1-0.2 s per step here) is far larger than a loaded machine's
# noise in a base step of a few ms, so that the part it changed is the one named.


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def train(variant: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    env = {**os.environ, "DISTKPI_PROFILE_DIR": str(folder), "DISTKPI_PROFILE_STEPS": str(STEPS)}
    done = subprocess.run(
        [sys.executable, str(TRAINING), variant, str(free_port())],
        env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return folder


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train("base", tmp_path_factory.mktemp("base") / "traces")


@pytest.mark.parametrize(
    ("variant", "part"), [("comm", "communication"), ("compute", "compute"), ("data", "data")]
)
def test_the_part_a_head_changed_is_the_largest_change(
    variant: str, part: str, base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    (run / "base").mkdir(parents=True)
    for trace in base.iterdir():
        (run / "base" / trace.name).write_bytes(trace.read_bytes())
    train(variant, run / "head" / "trainer")
    (run / "head" / "commit").write_text("f00d\n")

    diagnosis = diagnose_folder(run)

    assert diagnosis.largest_change == part
    assert main(["diagnose", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["diagnosis"]
    assert out["largest_change"] == part and out["head_sha"] == "f00d" and out["base_sha"] is None
    assert out["steps"] == STEPS
    trainer = out["roles"]["trainer"]
    assert trainer["base"]["ranks"] == trainer["head"]["ranks"] == 2
    assert set(trainer["base"]["collectives"]) == {"all_reduce"}
    if variant == "comm":  # one more all_reduce per step, of 16M floats
        calls = trainer["head"]["collectives"]["all_reduce"]["count"]
        assert calls == trainer["base"]["collectives"]["all_reduce"]["count"] + 1
        moved = trainer["head"]["collectives"]["all_reduce"]["bytes"]
        assert moved - trainer["base"]["collectives"]["all_reduce"]["bytes"] == 64_000_000
    assert main(["diagnose", str(run)]) == 0
    assert f": {part} +" in capsys.readouterr().out


def test_the_same_code_twice_has_no_largest_change(base: Path) -> None:
    ranks = [reduce_trace(read_trace(p.read_bytes())) for p in sorted(base.iterdir())]
    from distkpi_cli.diagnosis.compare import diagnose

    assert diagnose({"trainer": ranks}, {"trainer": ranks}).largest_change is None


def test_the_reference_job_writes_a_trace_per_rank_that_reduces(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    env = {
        **os.environ,
        "DISTKPI_NODE_INDEX": "0", "DISTKPI_NUM_NODES": "1", "DISTKPI_ROLE": "trainer",
        "DISTKPI_ROLE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
        "DISTKPI_TRAINERS": "1", "DISTKPI_GPUS_PER_TRAINER": "2", "DISTKPI_BATCH_SIZE": "32",
        "DISTKPI_EPOCHS": "1", "DISTKPI_PROFILE_DIR": str(traces), "DISTKPI_PROFILE_STEPS": "3",
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "infra/job/reference.py", "--features", "64", "--hidden", "64",
         "--repeat", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in traces.iterdir()) == ["rank-0.json", "rank-1.json"]
    for path in traces.iterdir():
        r = reduce_trace(read_trace(path.read_bytes()))
        assert r.device == "cpu" and r.steps == 3
        assert r.compute_s > 0 and r.communication_s > 0
        assert r.collectives["all_reduce"].count >= 1
        parts = r.compute_s + r.exposed_communication_s + r.other_s + r.data_s + r.idle_s
        assert parts == pytest.approx(r.step_s)


def test_a_pserver_trainer_spends_its_step_in_pulls_and_pushes(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    common = {
        **os.environ,
        "DISTKPI_NUM_NODES": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
        "DISTKPI_TRAINERS": "1", "DISTKPI_GPUS_PER_TRAINER": "1", "DISTKPI_PSERVERS": "1",
        "DISTKPI_BATCH_SIZE": "32", "DISTKPI_EPOCHS": "1",
    }  # fmt: skip
    command = [sys.executable, "infra/job/reference.py", "--features", "64", "--hidden", "64",
               "--repeat", "1"]  # fmt: skip
    server = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**common, "DISTKPI_NODE_INDEX": "1", "DISTKPI_ROLE": "pserver",
             "DISTKPI_ROLE_RANK": "0"},
    )  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
            env={**common, "DISTKPI_NODE_INDEX": "0", "DISTKPI_ROLE": "trainer",
                 "DISTKPI_ROLE_RANK": "0", "DISTKPI_PROFILE_DIR": str(traces),
                 "DISTKPI_PROFILE_STEPS": "3"},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert server.wait(timeout=120) == 0
    finally:
        if server.poll() is None:
            server.kill()
    r = reduce_trace(read_trace((traces / "rank-0.json").read_bytes()))
    assert r.collectives["rpc"].count == 2  # a pull and a push per step, to one pserver
    assert r.exposed_communication_s > r.compute_s
