"""Who this node is: read from AWS Batch's multi-node variables and distkpi's DISTKPI_*."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    index: int
    num_nodes: int
    main_index: int
    master_addr: str
    master_port: int
    run_id: str
    config: str
    s3_prefix: str
    trainers: int
    gpus_per_trainer: int
    pservers: int
    batch_size: int
    epochs: int
    target_accuracy: float
    fail_at_epoch: int | None

    @property
    def role(self) -> str:
        return "trainer" if self.index < self.trainers else "pserver"

    @property
    def rank(self) -> int:
        """Rank within the role: trainer n or pserver n."""
        return self.index if self.role == "trainer" else self.index - self.trainers

    @property
    def trainer_workers(self) -> int:
        return self.trainers * self.gpus_per_trainer

    @property
    def local_batch(self) -> int:
        return max(1, self.batch_size // self.trainer_workers)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Node:
        index = int(env.get("AWS_BATCH_JOB_NODE_INDEX", "0"))
        main = int(env.get("AWS_BATCH_JOB_MAIN_NODE_INDEX", "0"))
        # Batch gives the main node's address to the other nodes only.
        addr = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS") or "127.0.0.1"
        fail = env.get("DISTKPI_FAIL_AT_EPOCH")
        return cls(
            index=index,
            num_nodes=int(env.get("AWS_BATCH_JOB_NUM_NODES", "1")),
            main_index=main,
            master_addr=addr if index != main else "127.0.0.1",
            master_port=int(env.get("DISTKPI_MASTER_PORT", "29500")),
            run_id=env["DISTKPI_RUN_ID"],
            config=env["DISTKPI_CONFIG"],
            s3_prefix=env["DISTKPI_S3_PREFIX"],
            trainers=int(env["DISTKPI_TRAINERS"]),
            gpus_per_trainer=int(env["DISTKPI_GPUS_PER_TRAINER"]),
            pservers=int(env.get("DISTKPI_PSERVERS", "0")),
            batch_size=int(env["DISTKPI_BATCH_SIZE"]),
            epochs=int(env.get("DISTKPI_EPOCHS", "5")),
            target_accuracy=float(env.get("DISTKPI_TARGET_ACCURACY", "0.9")),
            fail_at_epoch=int(fail) if fail else None,
        )
