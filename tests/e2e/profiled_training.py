"""A short data-parallel training on CPU (2 gloo workers), profiled the way the diagnose guide tells
a user to: `python profiled_training.py VARIANT` with DISTKPI_PROFILE_DIR and
DISTKPI_PROFILE_STEPS set. VARIANT is what a head commit changed against `base`: `comm` adds
an all_reduce per step, `compute` more computation, `data` a slow data loader."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset

WORKERS = 2
STEPS = 12  # more than the profiler's warm-up and its profiled steps


def _collate(
    variant: str,
) -> Callable[[list[tuple[torch.Tensor, torch.Tensor]]], list[torch.Tensor]]:
    def collate(rows: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
        if variant == "data":
            time.sleep(0.15)  # a slow loader: decoding, a remote file system
        xs, ys = zip(*rows, strict=True)
        return [torch.stack(xs), torch.stack(ys)]

    return collate


def worker(rank: int, variant: str, port: int) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORKERS)  # fmt: skip
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(STEPS * 32, 256), torch.randint(0, 10, (STEPS * 32,)))
    loader = DataLoader(data, batch_size=32, collate_fn=_collate(variant))
    extra = torch.randn(16_000_000)
    weight = torch.randn(256, 256) / 16

    # the lines docs/how-to/diagnose.md shows
    folder = os.environ.get("DISTKPI_PROFILE_DIR")  # set only when the job wants a trace
    prof = folder and torch.profiler.profile(
        record_shapes=True,  # the bytes of each collective
        schedule=torch.profiler.schedule(
            wait=0, warmup=2, active=int(os.environ["DISTKPI_PROFILE_STEPS"]), repeat=1
        ),
        on_trace_ready=lambda p: p.export_chrome_trace(f"{folder}/rank-{rank}.json"),
    )
    if prof:  # before the loop
        prof.start()
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
        if variant == "comm":
            dist.all_reduce(extra)  # 64 MB more on the wire each step
        if variant == "compute":
            h = weight
            for _ in range(40):
                h = torch.tanh(h @ weight)
        if prof:  # at the end of each step
            prof.step()
    if prof:  # after the loop
        prof.stop()
    del ddp
    # without it one rank may tear gloo down while the other still sends: SIGABRT
    dist.barrier()
    dist.destroy_process_group()
    # the traces are written and the work is done; leaving without the interpreter's
    # finalizers, because a thread of gloo or of the profiler destroyed at exit still
    # joinable aborts the worker now and then under load ("terminate called without an
    # active exception", SIGABRT), which fails the run for nothing it measured
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    variant, port = sys.argv[1], int(sys.argv[2])
    mp.spawn(worker, args=(variant, port), nprocs=WORKERS, join=True)
