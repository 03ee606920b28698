"""Who this node is, from the variables `distkpi node` exports
(docs/tutorials/your-benchmark.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    index: int
    num_nodes: int
    role: str
    rank: int
    master_addr: str
    master_port: int
    trainers: int
    gpus_per_trainer: int
    pservers: int
    batch_size: int
    epochs: int
    fail_at_epoch: int | None

    @property
    def trainer_workers(self) -> int:
        return self.trainers * self.gpus_per_trainer

    @property
    def local_batch(self) -> int:
        return max(1, self.batch_size // self.trainer_workers)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Node:
        fail = env.get("DISTKPI_FAIL_AT_EPOCH")
        return cls(
            index=int(env["DISTKPI_NODE_INDEX"]),
            num_nodes=int(env["DISTKPI_NUM_NODES"]),
            role=env["DISTKPI_ROLE"],
            rank=int(env["DISTKPI_ROLE_RANK"]),
            master_addr=env["MASTER_ADDR"],
            master_port=int(env["MASTER_PORT"]),
            trainers=int(env["DISTKPI_TRAINERS"]),
            gpus_per_trainer=int(env["DISTKPI_GPUS_PER_TRAINER"]),
            pservers=int(env.get("DISTKPI_PSERVERS", "0")),
            batch_size=int(env["DISTKPI_BATCH_SIZE"]),
            epochs=int(env.get("DISTKPI_EPOCHS", "5")),
            fail_at_epoch=int(fail) if fail else None,
        )
