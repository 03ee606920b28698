"""GPU memory samples from nvidia-smi, taken while training runs (when there is a GPU)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

QUERY = ["--query-gpu=timestamp,index,memory.used", "--format=csv", "-lms", "500"]


class GpuSampler:
    def __init__(self, out: Path) -> None:
        self.out = out
        self._proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("nvidia-smi") is not None

    def start(self) -> None:
        self._file = self.out.open("wb")
        self._proc = subprocess.Popen(["nvidia-smi", *QUERY], stdout=self._file)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._file.close()
