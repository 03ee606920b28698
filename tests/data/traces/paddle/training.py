"""How the Paddle traces beside this file were made: a small classifier trained on one CPU
core with `paddle.io.DataLoader`, profiled by `paddle.profiler` as the Paddle reference job
profiles (infra/job/paddle/profiling.py: 2 warm-up steps, then the steps asked).

    python training.py VARIANT OUT.json.gz   # in the pinned environment (infra/job/paddle/cpu.txt)

VARIANT is what a head changed against `base`: `data` a slow data loader (0.1 s a batch),
`compute` more computation per step (40 more 256x256 matmuls)."""

from __future__ import annotations

import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import paddle
from paddle import profiler

BATCHES = 8  # more than the warm-up and the profiled steps
STEPS = 3


class Digits(paddle.io.Dataset):  # type: ignore[misc]
    def __init__(self, variant: str) -> None:
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((BATCHES * 32, 64)).astype("float32")
        self.y = rng.integers(0, 10, BATCHES * 32).astype("int64")
        self.variant = variant

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.int64]:
        if self.variant == "data" and i % 32 == 0:
            time.sleep(0.1)  # a slow loader: decoding, a remote file system
        return self.x[i], self.y[i]


def main(variant: str, out: Path) -> None:
    paddle.set_device("cpu")
    paddle.seed(0)
    net = paddle.nn.Sequential(
        paddle.nn.Linear(64, 256), paddle.nn.ReLU(), paddle.nn.Linear(256, 10)
    )
    optimizer = paddle.optimizer.SGD(0.01, parameters=net.parameters())
    loader = paddle.io.DataLoader(Digits(variant), batch_size=32)
    weight = paddle.randn([256, 256]) / 16
    raw = Path(tempfile.mkdtemp()) / "rank-0.json"
    prof = profiler.Profiler(
        targets=[profiler.ProfilerTarget.CPU],
        scheduler=profiler.make_scheduler(closed=0, ready=2, record=STEPS, repeat=1),
        on_trace_ready=lambda p: p.export(str(raw), format="json"),
    )
    prof.start()
    for x, y in loader:
        loss = paddle.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        if variant == "compute":
            h = weight
            for _ in range(40):
                h = paddle.tanh(h @ weight)
        prof.step()
    prof.stop()
    out.write_bytes(gzip.compress(raw.read_bytes(), mtime=0))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
