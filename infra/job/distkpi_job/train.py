"""Trainer workers: one process per GPU (per CPU slot without one), collective or with
pservers; a one-GPU trainer is its own worker."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import rpc

from distkpi_job import pserver
from distkpi_job.data import accuracy, datasets, model
from distkpi_job.mllog import MLLog
from distkpi_job.node import Node
from distkpi_job.profiling import profiled

TIMEOUT = timedelta(minutes=10)
Step = Callable[[torch.Tensor, torch.Tensor], None]


@dataclass(frozen=True)
class Hyper:
    features: int
    hidden: int
    repeat: int
    lr: float


def device_for(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    torch.set_num_threads(1)  # one CPU core stands in for one GPU
    return torch.device("cpu")


def worker(local_rank: int, node: Node, hp: Hyper) -> None:
    """Entry point of each local worker process (torch.multiprocessing.spawn, or the node's
    own process when it has one GPU); local rank 0 prints the node's :::MLLOG lines to stdout."""
    rank = node.rank * node.gpus_per_trainer + local_rank
    device = device_for(local_rank)
    log = MLLog(sys.stdout) if local_rank == 0 else None
    net = model(hp.features, hp.hidden).to(device)
    if node.pservers:
        options = rpc.TensorPipeRpcBackendOptions(
            init_method=f"tcp://{node.master_addr}:{node.master_port}",
            rpc_timeout=TIMEOUT.total_seconds(),
        )
        world = node.trainer_workers + node.pservers
        rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world, rpc_backend_options=options)
        step, evaluated = _pserver_step(node, hp, net, device), net
    else:
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(
            backend,
            init_method=f"tcp://{node.master_addr}:{node.master_port}",
            rank=rank,
            world_size=node.trainer_workers,
            timeout=TIMEOUT,
        )
        ddp = torch.nn.parallel.DistributedDataParallel(
            net, device_ids=[local_rank] if device.type == "cuda" else None
        )
        step, evaluated = _collective_step(hp, ddp), net
        del ddp  # the step alone holds it, so that dropping the step frees it (below)
    try:
        _train(
            node,
            hp,
            rank=rank,
            local_rank=local_rank,
            device=device,
            step=step,
            evaluated=evaluated,
            log=log,
        )
    finally:
        if node.pservers:
            rpc.shutdown()
        else:
            # DDP's reducer holds the gloo process group; left to interpreter exit, its
            # threads are torn down there and the worker aborts now and then (SIGABRT).
            del step
            gc.collect()
            dist.destroy_process_group()


def _collective_step(hp: Hyper, ddp: torch.nn.Module) -> Step:
    optimizer = torch.optim.SGD(ddp.parameters(), lr=hp.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(ddp(x), y).backward()  # DDP all-reduces the gradients
        optimizer.step()

    return step


def _pserver_step(node: Node, hp: Hyper, net: torch.nn.Module, device: torch.device) -> Step:
    params = list(net.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    lr = hp.lr / node.trainer_workers  # asynchronous updates from every worker add up

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        # the profiler records no RPC: these spans are what a diagnosis counts as communication
        with torch.profiler.record_function("rpc_async#pull"), torch.no_grad():
            pulls = [rpc.rpc_async(f"ps{i}", pserver.pull) for i in range(node.pservers)]
            for future in pulls:
                for index, value in future.wait().items():
                    params[index].copy_(value.to(device))
        net.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        shards: list[dict[int, torch.Tensor]] = [{} for _ in range(node.pservers)]
        for index, p in enumerate(params):
            assert p.grad is not None
            shards[index % node.pservers][index] = p.grad.detach().cpu()
        with torch.profiler.record_function("rpc_async#push"):
            pushes = [
                rpc.rpc_async(f"ps{i}", pserver.push, args=(s, lr)) for i, s in enumerate(shards)
            ]
            torch.futures.wait_all(pushes)

    return step


def _train(
    node: Node,
    hp: Hyper,
    *,
    rank: int,
    local_rank: int,
    device: torch.device,
    step: Step,
    evaluated: torch.nn.Module,
    log: MLLog | None,
) -> None:
    train_x, train_y, test_x, test_y = datasets(hp.features, hp.repeat)
    world = node.trainer_workers
    batch = node.local_batch
    steps = (len(train_x) // world) // batch  # the same on every worker, as DDP needs
    shard = torch.arange(rank, len(train_x), world)
    if log:
        log.info(
            f"trainer {node.rank}: {world} worker(s), local batch {batch}, {steps} steps/epoch"
        )
        log.event("global_batch_size", batch * world)
        log.event("run_start")
    with profiled(rank) as profiler_step:  # a no-op unless DISTKPI_PROFILE_DIR is set
        for epoch in range(node.epochs):
            order = shard[
                torch.randperm(len(shard), generator=torch.Generator().manual_seed(epoch))
            ]
            started = time.perf_counter()
            for s in range(steps):
                idx = order[s * batch : (s + 1) * batch]
                step(train_x[idx].to(device), train_y[idx].to(device))
                profiler_step()
            elapsed = time.perf_counter() - started
            if node.fail_at_epoch == epoch and local_rank == 0:
                message = f"injected failure after epoch {epoch} (DISTKPI_FAIL_AT_EPOCH)"
                if log:  # another worker's error may be the one the node reports
                    log.info(message)
                raise RuntimeError(message)
            if log:
                # workers step in lockstep, so the node's rate is one worker's times its workers
                rate = steps * batch * node.gpus_per_trainer / elapsed
                log.event("tracked_stats", {"throughput": round(rate, 3)}, step=epoch + 1)
                evaluated.eval()
                log.event(
                    "eval_accuracy",
                    accuracy(evaluated, test_x.to(device), test_y.to(device)),
                    epoch_num=epoch,
                )
                evaluated.train()
    if log:
        log.event("run_stop", status="success")
