"""GPU memory sampled with nvidia-smi while a command runs, when there is one on the PATH.

The sampler is a context manager so that it stops however the command ends: exited,
stopped at its deadline, or never started at all (a command that cannot start)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from distkpi_cli.node.secrets import without_secrets

GPU_QUERY = ["--query-gpu=timestamp,index,memory.used", "--format=csv", "-lms", "500"]
STOP_WAIT_S = 10  # how long a sampler asked to stop is given before it is killed


@contextmanager
def gpu_sampled(into: Path) -> Iterator[None]:
    """nvidia-smi's samples written to ``into`` while the block runs (with no secret in its
    environment); nothing when there is no nvidia-smi. When the block ends, the sampler is
    stopped and reaped, and ``into`` closed."""
    if not shutil.which("nvidia-smi"):
        yield
        return
    with into.open("wb") as out:
        sampler = subprocess.Popen(
            ["nvidia-smi", *GPU_QUERY],
            stdout=out,
            stdin=subprocess.DEVNULL,
            env=without_secrets(os.environ),
        )
        try:
            yield
        finally:
            sampler.terminate()
            try:
                sampler.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                sampler.kill()
                sampler.wait()
