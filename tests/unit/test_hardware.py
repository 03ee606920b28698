"""What a node says it ran on, and what a config and its history make of it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from distkpi.domain.history_rows import recent_gpu_hours
from distkpi.domain.kpis.engine import MIXED, UNKNOWN, ConfigKpis
from distkpi.domain.records import HistoryRecord
from distkpi_cli.node.hardware import read_hardware
from tests.conftest import RunBuilder, pass_log
from tests.unit.test_kpis import kpis

NO_IMDS = {"AWS_EC2_METADATA_DISABLED": "true"}


class _Imds(BaseHTTPRequestHandler):
    """IMDSv2 as EC2 serves it: a session token, then metadata only with that token."""

    def do_PUT(self) -> None:
        ok = self.path == "/latest/api/token" and self.headers.get(
            "X-aws-ec2-metadata-token-ttl-seconds"
        )
        self._answer(200 if ok else 400, b"token-1")

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") != "token-1":
            self._answer(401, b"")
        elif self.path == "/latest/meta-data/instance-type":
            self._answer(200, b"p4d.24xlarge")
        else:
            self._answer(404, b"")

    def _answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def imds() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Imds)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An nvidia-smi on PATH that lists two A100s for `--query-gpu=name`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(
        '#!/bin/sh\n[ "$1" = "--query-gpu=name" ] && printf "NVIDIA A100-SXM4-40GB\\n'
        'NVIDIA A100-SXM4-40GB\\n" && exit 0\nexit 9\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return script


@pytest.fixture
def no_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def test_imds_v2_and_nvidia_smi_name_the_hardware(imds: str, nvidia_smi: Path) -> None:
    found = read_hardware({"AWS_EC2_METADATA_SERVICE_ENDPOINT": imds}, "trainer", Path("/none"))
    assert found.to_json() == {
        "instance_type": "p4d.24xlarge",
        "gpu_model": "NVIDIA A100-SXM4-40GB",
        "gpu_count": 2,
    }


def test_without_imds_the_firmware_of_a_nitro_instance_names_its_type(
    tmp_path: Path, nvidia_smi: Path
) -> None:
    (tmp_path / "sys_vendor").write_text("Amazon EC2\n")
    (tmp_path / "product_name").write_text("p5.48xlarge\n")
    assert read_hardware(NO_IMDS, "trainer", tmp_path).instance_type == "p5.48xlarge"


def test_what_cannot_be_read_is_unknown_with_a_problem(tmp_path: Path, no_gpu: None) -> None:
    (tmp_path / "sys_vendor").write_text("QEMU\n")
    (tmp_path / "product_name").write_text("Standard PC\n")
    found = read_hardware(NO_IMDS, "trainer", tmp_path).to_json()
    assert found["instance_type"] == UNKNOWN and found["gpu_model"] == UNKNOWN
    assert "instance type unknown" in found["problem"] and "nvidia-smi" in found["problem"]


def test_a_pserver_and_a_local_node_without_gpu_say_so_without_a_problem(
    no_gpu: None,
) -> None:
    local = read_hardware({"DISTKPI_INSTANCE_TYPE": "local"}, "trainer")
    assert (local.instance_type, local.gpu_model, local.problems) == ("local", "cpu", ())
    server = read_hardware({"DISTKPI_INSTANCE_TYPE": "c6i.4xlarge"}, "pserver")
    assert (server.gpu_model, server.gpu_count, server.problems) == ("none", 0, ())


def hardware(instance: str, gpu: str = "NVIDIA A100") -> dict[str, object]:
    return {"instance_type": instance, "gpu_model": gpu, "gpu_count": 8}


def test_a_config_carries_its_trainers_hardware_and_gpu_hours(run_builder: RunBuilder) -> None:
    b = run_builder.config("2x8-1ps", trainers=2, gpus=8, pservers=1)
    for node in (0, 1):
        files = [(f"trainer-{node}.log", "trainer", node, "log", pass_log(100, 100))]
        b.node("2x8-1ps", node, files, hardware=hardware("p4d.24xlarge"), wall_s=1800.0)
    server = hardware("c6i.4xlarge", "none")
    b.node("2x8-1ps", 2, [("pserver-0.log", "pserver", 0, "log", "")], hardware=server, wall_s=1e4)
    config = kpis(b).config("2x8-1ps")
    assert config.status == "ok"
    assert config.hardware == "p4d.24xlarge/NVIDIA A100"
    assert config.gpu_hours == pytest.approx(8.0)  # 2 nodes x 8 GPUs x half an hour; pserver 0
    assert kpis(b).gpu_hours == pytest.approx(8.0)


def test_trainers_on_different_hardware_are_mixed_and_say_so(run_builder: RunBuilder) -> None:
    b = run_builder.config("2x8", trainers=2, gpus=8)
    for node, instance in ((0, "p4d.24xlarge"), (1, "p5.48xlarge")):
        files = [(f"trainer-{node}.log", "trainer", node, "log", pass_log(100, 100))]
        b.node("2x8", node, files, hardware=hardware(instance))
    config = kpis(b).config("2x8")
    assert config.status == "ok" and config.hardware == MIXED
    assert any("trainers ran on different hardware" in p for p in config.problems)


def test_unreadable_hardware_is_a_problem_never_a_failure(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1")
    unread = {**hardware(UNKNOWN), "problem": "instance type unknown: no IMDS"}
    b.node("1x1", 0, [("trainer-0.log", "trainer", 0, "log", pass_log(100))], hardware=unread)
    config = kpis(b).config("1x1")
    assert config.status == "ok" and config.hardware == UNKNOWN
    assert "node 0: hardware: instance type unknown: no IMDS" in config.problems


def record(run_id: str, config: str, gpu_hours: float | None) -> HistoryRecord:
    data = {"name": config, "gpus": 8, "status": "ok", "gpu_hours": gpu_hours}
    return HistoryRecord(
        "o/r", "develop", "m", config, "a" * 40, run_id, "t", "t", ConfigKpis.from_record(data)
    )


def test_the_cost_estimate_is_the_median_run_of_the_newest_five() -> None:
    records = [
        record(f"r{i}", c, hours)
        for i, hours in enumerate([10.0, 2.0, 4.0, 6.0, 8.0, 1000.0])
        for c in ("a", "b")
    ]
    assert recent_gpu_hours(records) == (12.0, 5)  # runs of 20, 4, 8, 12, 16 GPU-hours
    assert recent_gpu_hours([record("r0", "a", None)]) == (None, 0)
