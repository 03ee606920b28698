"""The reference LLM job: a small GPT trained data-parallel, with DDP or with FSDP (the
config's ``zero_stage: 3``, DISTKPI_ZERO_STAGE), one worker per GPU (per CPU core without
one), NCCL on GPUs and gloo on CPUs, printing a torchtitan-style line per step from rank 0.

Every config trains on the same global batch (DISTKPI_BATCH_SIZE sequences a step, split
between the workers) drawn the same way from the same corpus from the same initial
parameters, so the loss curves of 1, 2 or N workers differ only by floating-point order.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from distkpi_job.gpt import GPT, Shape, corpus, model
from distkpi_job.node import Node
from distkpi_job.train import device_for

TIMEOUT = timedelta(minutes=10)
GIB = 1024.0**3


@dataclass(frozen=True)
class Hyper:
    shape: Shape
    steps: int
    lr: float
    seed: int
    corpus_bytes: int
    fsdp: bool
    bf16: bool


def args(argv: list[str] | None) -> Hyper:
    p = argparse.ArgumentParser(prog="llm.py")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=int(os.environ.get("DISTKPI_SEQ_LEN", "64")))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus-bytes", type=int, default=1 << 20)
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="bf16: autocast")
    a = p.parse_args(argv)
    zero_stage = int(os.environ.get("DISTKPI_ZERO_STAGE") or 0)
    return Hyper(
        Shape(a.layers, a.d_model, a.heads, a.seq_len),
        a.steps,
        a.lr,
        a.seed,
        a.corpus_bytes,
        fsdp=zero_stage == 3,
        bf16=a.dtype == "bf16",
    )


def _wrap(net: GPT, hp: Hyper, device: torch.device) -> torch.nn.Module:
    if hp.fsdp:
        from torch.distributed.fsdp import fully_shard

        for block in net.blocks:
            fully_shard(block)
        fully_shard(net)
        return net
    return torch.nn.parallel.DistributedDataParallel(
        net, device_ids=[device.index] if device.type == "cuda" else None
    )


def _memory(device: torch.device) -> str:
    """GPU: torch's peak reserved memory, as torchtitan prints it (the `memory:` field that
    readers take for GPU memory); CPU: this process's peak RSS, labelled `rss:`."""
    if device.type == "cuda":
        peak = torch.cuda.max_memory_reserved(device)
        total = torch.cuda.get_device_properties(device).total_memory
        return f"memory: {peak / GIB:.2f}GiB({100.0 * peak / total:.2f}%)"
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return f"rss: {rss_kib * 1024 / GIB:.2f}GiB"


def worker(local_rank: int, node: Node, hp: Hyper) -> None:
    rank = node.rank * node.gpus_per_trainer + local_rank
    world = node.trainer_workers
    device = device_for(local_rank)
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo",
        init_method=f"tcp://{node.master_addr}:{node.master_port}",
        rank=rank,
        world_size=world,
        timeout=TIMEOUT,
    )
    try:
        _train(rank, world, node, hp, device)
    finally:
        gc.collect()  # DDP's reducer holds the gloo group: free it before the group goes
        dist.destroy_process_group()


def _train(rank: int, world: int, node: Node, hp: Hyper, device: torch.device) -> None:
    shape = hp.shape
    net = model(shape, hp.seed).to(device)
    flops_per_token = shape.flops_per_token(net.non_embedding_params())
    wrapped = _wrap(net, hp, device)
    optimizer = torch.optim.AdamW(wrapped.parameters(), lr=hp.lr, weight_decay=0.0)
    text = corpus(hp.corpus_bytes, hp.seed)
    if node.batch_size % world:
        raise ValueError(f"batch size {node.batch_size} is not a multiple of {world} workers")
    local = node.batch_size // world
    tokens = local * shape.seq_len  # one worker's tokens per step
    out = sys.stdout if rank == 0 else None
    if out:
        params = sum(p.numel() for p in net.parameters())
        mode = "FSDP" if hp.fsdp else "DDP"
        out.write(
            f"GPT {shape.layers} layers, d_model {shape.d_model}, {params:,} parameters, "
            f"{flops_per_token:.4g} FLOPs/token; {mode} on {world} {device.type} worker(s), "
            f"global batch {node.batch_size} x {shape.seq_len} tokens\n"
        )
        out.flush()
    for step in range(1, hp.steps + 1):
        g = torch.Generator().manual_seed(hp.seed * 1_000_003 + step)
        starts = torch.randint(0, len(text) - shape.seq_len - 1, (node.batch_size,), generator=g)
        mine = starts[rank * local : (rank + 1) * local]
        rows = torch.stack([text[s : s + shape.seq_len + 1] for s in mine.tolist()]).to(device)
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=hp.bf16):
            loss = wrapped(rows[:, :-1], rows[:, 1:])
        loss.backward()
        optimizer.step()
        mean = loss.detach().float().clone()
        dist.all_reduce(mean)  # the global batch's loss, what one process would see
        mean /= world
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - began
        if out:
            tps = tokens / elapsed
            tflops = flops_per_token * tps / 1e12
            out.write(
                f"step: {step:2d}  loss: {mean.item():9.6f}  {_memory(device)}  "
                f"tps: {tps:,.0f}  tflops: {tflops:.4f}  step_time: {elapsed:.4f}s\n"
            )
            out.flush()


def main(argv: list[str] | None = None) -> int:
    hp = args(argv)
    node = Node.from_env()
    if node.role != "trainer" or node.pservers:
        raise SystemExit("the LLM job trains collectively: give its configs no pservers")
    if node.gpus_per_trainer == 1:  # its only worker: no second interpreter to start
        worker(0, node, hp)
        return 0
    import torch.multiprocessing as mp

    # a CPU worker forks (no second import of torch, seconds on a busy machine); CUDA
    # cannot be forked once initialised, so GPU workers are spawned
    method = "spawn" if torch.cuda.is_available() else "fork"
    mp.start_processes(
        worker, args=(node, hp), nprocs=node.gpus_per_trainer, join=True, start_method=method
    )
    return 0
