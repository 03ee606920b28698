"""The GPU sampler (node/gpusampler.py): nvidia-smi stops with the command, however the
command ends, a command that cannot start included. A fake nvidia-smi on the PATH stands in
for the real one, as in tests/unit/test_node_attacks.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from distkpi_cli.node import gpusampler
from distkpi_cli.node.runner import NodeFiles, run_command
from distkpi_cli.node.source import NodeProblem


@pytest.fixture
def samplers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[Any]]:
    """A fake nvidia-smi on the PATH that writes a sample then runs until stopped; the
    processes started as samplers, recorded."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'timestamp, index, memory.used [MiB]'\nexec sleep 600\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    started: list[subprocess.Popen[Any]] = []

    class Recorded(subprocess.Popen[Any]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if list(self.args)[:1] == ["nvidia-smi"]:  # not the command itself
                started.append(self)

    monkeypatch.setattr(gpusampler.subprocess, "Popen", Recorded)
    return started


def files_in(tmp_path: Path) -> NodeFiles:
    files = NodeFiles(tmp_path / "work", "trainer", 0, tmp_path / "logs")
    files.make()
    return files


def test_a_command_that_cannot_start_leaves_no_sampler_running(
    samplers: list[subprocess.Popen[Any]], tmp_path: Path
) -> None:
    files = files_in(tmp_path)
    with pytest.raises(NodeProblem, match="command cannot start: /no/such/program"):
        run_command(["/no/such/program"], tmp_path, {"PATH": "/usr/bin:/bin"}, files, 30)
    (sampler,) = samplers
    assert sampler.returncode is not None  # stopped and reaped
    assert files.gpu_csv.exists()


def test_the_sampler_stops_when_the_command_exits(
    samplers: list[subprocess.Popen[Any]], tmp_path: Path
) -> None:
    files = files_in(tmp_path)
    ended = run_command([sys.executable, "-c", "pass"], tmp_path, {}, files, 30)
    assert ended.code == 0
    (sampler,) = samplers
    assert sampler.returncode is not None


def test_no_nvidia_smi_no_sampler_and_no_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    files = files_in(tmp_path)
    with gpusampler.gpu_sampled(files.gpu_csv):
        pass
    assert not files.gpu_csv.exists()
