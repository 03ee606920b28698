"""python -m distkpi_job [--features N --hidden N --repeat N --lr X]: train as this node.

A plain training script: it reads the variables `distkpi node` exports and prints
:::MLLOG lines to stdout; the node runner captures them, samples GPU memory and uploads.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from distkpi_job.mllog import MLLog
from distkpi_job.node import Node


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="distkpi_job")
    p.add_argument("--features", type=int, default=512, help="input width (digits tiled)")
    p.add_argument("--hidden", type=int, default=1024, help="hidden layer width")
    p.add_argument("--repeat", type=int, default=4, help="noisy copies of the training set")
    p.add_argument("--lr", type=float, default=0.05)
    return p.parse_args(argv)


def _run(node: Node, args: argparse.Namespace, log: MLLog) -> None:
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
    if node.gpus_per_trainer == 1:  # its only worker: no second interpreter to start
        worker(0, node, hp)
        return
    import torch.multiprocessing as mp

    mp.spawn(worker, args=(node, hp), nprocs=node.gpus_per_trainer, join=True)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    node = Node.from_env()
    log = MLLog(sys.stdout)
    log.info(f"node {node.index}/{node.num_nodes}: {node.role} {node.rank}")
    try:
        _run(node, args, log)
    except BaseException:
        sys.stdout.write(traceback.format_exc())
        log.info(f"node {node.index} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
