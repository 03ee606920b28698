"""Where a node stands in its job, and the environment every benchmark command gets.

AWS Batch tells a node its index, the node count and the main node's address (to the other
nodes only); the launcher's DISTKPI_* variables say the config. The node runner adds every
node's address and port from the rendezvous, and exports what the frameworks expect
(docs/tutorials/your-benchmark.md has the table): generic DISTKPI_*, PyTorch's
MASTER_*/NNODES/NODE_RANK, and PaddlePaddle fleet's role-maker variables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from distkpi.domain.planning import jobenv
from distkpi.exceptions import ContractError

_NAME = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Endpoint:
    node: int
    address: str
    port: int
    # a second port reserved on the node, for a framework's own rendezvous (Paddle's gloo)
    spare_port: int | None = None

    def __str__(self) -> str:
        return f"{self.address}:{self.port}"


@dataclass(frozen=True)
class Place:
    index: int
    num_nodes: int
    main_index: int
    main_address: str | None  # Batch gives it to the other nodes only
    run_id: str
    config: str
    s3_prefix: str
    repo: str
    sha: str
    trainers: int
    gpus_per_trainer: int
    pservers: int
    batch_size: int

    @property
    def role(self) -> str:
        """Node i < trainers is trainer i; the rest are the parameter servers."""
        return "trainer" if self.index < self.trainers else "pserver"

    @property
    def role_rank(self) -> int:
        return self.index if self.role == "trainer" else self.index - self.trainers

    @property
    def is_main(self) -> bool:
        return self.index == self.main_index

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Place:
        """From Batch's multi-node variables (absent for a single-node job) and DISTKPI_*."""

        def need(name: str) -> str:
            value = env.get(name)
            if not value:
                raise ContractError(f"{name} is not set: the launcher sets it on every job")
            return value

        def number(name: str, default: str | None = None) -> int:
            text = env.get(name) or default or need(name)
            if not text.isdigit():
                raise ContractError(f"{name} is not a number: {text!r}")
            return int(text)

        place = cls(
            index=number("AWS_BATCH_JOB_NODE_INDEX", "0"),
            num_nodes=number("AWS_BATCH_JOB_NUM_NODES", "1"),
            main_index=number("AWS_BATCH_JOB_MAIN_NODE_INDEX", "0"),
            main_address=env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS") or None,
            run_id=need(jobenv.RUN_ID),
            config=need(jobenv.CONFIG),
            s3_prefix=need(jobenv.S3_PREFIX),
            repo=need(jobenv.REPO),
            sha=need(jobenv.SHA),
            trainers=number(jobenv.TRAINERS),
            gpus_per_trainer=number(jobenv.GPUS_PER_TRAINER),
            pservers=number(jobenv.PSERVERS, "0"),
            batch_size=number(jobenv.BATCH_SIZE),
        )
        if place.trainers + place.pservers != place.num_nodes:
            raise ContractError(
                f"the job has {place.num_nodes} node(s), the config "
                f"{place.trainers} trainer(s) and {place.pservers} pserver(s)"
            )
        return place


def framework_environment(
    place: Place, endpoints: Mapping[int, Endpoint], source_dir: str, log_dir: str
) -> dict[str, str]:
    """What the command's environment holds, besides what the node was started with."""
    own, main = endpoints[place.index], endpoints[place.main_index]
    trainers = [str(endpoints[i]) for i in range(place.trainers)]
    pservers = [str(endpoints[i]) for i in range(place.trainers, place.num_nodes)]
    env = {
        jobenv.ROLE: place.role,
        jobenv.ROLE_RANK: str(place.role_rank),
        jobenv.NODE_INDEX: str(place.index),
        jobenv.NUM_NODES: str(place.num_nodes),
        jobenv.TRAINERS: str(place.trainers),
        jobenv.PSERVERS: str(place.pservers),
        jobenv.GPUS_PER_TRAINER: str(place.gpus_per_trainer),
        jobenv.BATCH_SIZE: str(place.batch_size),
        jobenv.SOURCE_DIR: source_dir,
        jobenv.LOG_DIR: log_dir,
        "MASTER_ADDR": main.address,
        "MASTER_PORT": str(main.port),
        "TRAINING_ROLE": place.role.upper(),
        "PADDLE_TRAINERS_NUM": str(place.trainers),
        "PADDLE_TRAINER_ENDPOINTS": ",".join(trainers),
        "PADDLE_PSERVERS_IP_PORT_LIST": ",".join(pservers),
        "PADDLE_CURRENT_ENDPOINT": str(own),
        "POD_IP": own.address,
        "PADDLE_PORT": str(own.port),
    }
    first_pserver = endpoints.get(place.trainers) if place.pservers else None
    if first_pserver is not None and first_pserver.spare_port is not None:
        # fleet's gloo barrier (PADDLE_GLOO_RENDEZVOUS=3) serves its store on pserver 0
        env["PADDLE_GLOO_HTTP_ENDPOINT"] = f"{first_pserver.address}:{first_pserver.spare_port}"
    if place.role == "trainer":
        env |= {
            "NNODES": str(place.trainers),
            "NODE_RANK": str(place.role_rank),
            "NPROC_PER_NODE": str(place.gpus_per_trainer),
            "PADDLE_TRAINER_ID": str(place.role_rank),
        }
    return env


def expand(arguments: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``${NAME}`` in each argument replaced by the variable's value; an unknown name is an
    error (a typo must not run a benchmark with an empty argument)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise ContractError(f"${{{name}}} in the command is not set")
        return env[name]

    return [_NAME.sub(value, argument) for argument in arguments]
