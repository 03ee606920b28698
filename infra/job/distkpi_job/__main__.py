"""python -m distkpi_job [--features N --hidden N --repeat N --lr X]: run this node."""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import traceback
from datetime import UTC, datetime
from pathlib import Path

from distkpi_job.gpu import GpuSampler
from distkpi_job.mllog import MLLog
from distkpi_job.node import Node
from distkpi_job.upload import NodeFile, upload, wait_for_manifests


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="distkpi_job")
    p.add_argument("--features", type=int, default=512, help="input width (digits tiled)")
    p.add_argument("--hidden", type=int, default=1024, help="hidden layer width")
    p.add_argument("--repeat", type=int, default=4, help="noisy copies of the training set")
    p.add_argument("--lr", type=float, default=0.05)
    return p.parse_args(argv)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _peak_rss_mib() -> float:
    kib = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    return round(kib / 1024, 1)


def _run(node: Node, args: argparse.Namespace, log_path: Path, log: MLLog) -> None:
    from distkpi_job.train import Hyper, worker

    hp = Hyper(args.features, args.hidden, args.repeat, args.lr)
    if node.role == "pserver":
        from distkpi_job.pserver import serve

        serve(
            node.rank,
            node.pservers,
            node.trainer_workers,
            features=hp.features,
            hidden=hp.hidden,
            master=f"{node.master_addr}:{node.master_port}",
            log=log,
        )
        return
    import torch.multiprocessing as mp

    mp.spawn(worker, args=(node, hp, str(log_path)), nprocs=node.gpus_per_trainer, join=True)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    node = Node.from_env()
    workdir = Path(os.environ.get("DISTKPI_WORKDIR") or tempfile.mkdtemp(prefix="distkpi-job-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stem = f"{node.role}-{node.rank}"
    log_path = workdir / f"{stem}.log"
    files = [NodeFile(log_path, node.role, node.rank, "log")]
    sampler = None
    if GpuSampler.available():
        sampler = GpuSampler(workdir / f"{stem}.gpu.csv")
        files.append(NodeFile(sampler.out, node.role, node.rank, "gpu_memory"))
        sampler.start()
    started, exit_code = _now(), 0
    log_path.write_text("")
    # append mode: the workers append to this log too, and this handle must not overwrite them
    with log_path.open("a") as out:
        log = MLLog(out)
        log.info(f"node {node.index}/{node.num_nodes} {stem} of {node.config} in {node.run_id}")
        try:
            _run(node, args, log_path, log)
        except BaseException:
            exit_code = 1
            out.write(traceback.format_exc())
            log.info(f"node {node.index} failed")
    if sampler is not None:
        sampler.stop()
    manifest = {
        "schema": 1,
        "node": node.index,
        "exit_code": exit_code,
        "started_at": started,
        "finished_at": _now(),
        "files": [],
        "peak_host_rss_mib": _peak_rss_mib(),
    }
    upload(node.s3_prefix, node.index, files, manifest)
    if node.index == node.main_index and node.num_nodes > 1:
        others = [i for i in range(node.num_nodes) if i != node.index]
        wait_s = float(os.environ.get("DISTKPI_NODE_WAIT_S", "900"))
        missing = wait_for_manifests(node.s3_prefix, others, wait_s)
        if missing:
            print(f"node(s) {missing} did not report within {wait_s:g}s", file=sys.stderr)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
