"""What each node of a config asks Batch for, and whether the config can ever be placed.

A trainer node asks for its GPUs, with vCPUs and memory in proportion; a parameter server
asks for no GPU. Nodes of a multi-node job are single-tenant, one instance each, so a
config needs at least the vCPUs of the smallest instance that fits each of its nodes, and a
config needing more than the compute environment's MaxvCpus would wait RUNNABLE forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from distkpi.domain.contracts import ConfigSpec

# Batch's own limits on a multi-node parallel job
BATCH_MAX_NODES = 1000
# ECS keeps part of an instance's memory for the OS and its agent: a job asking for all of
# it is never placed
USABLE_MEMORY = 0.95


class TrainerResources(BaseModel):
    """A suite's `resources`: what a trainer node asks for per GPU it uses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vcpus_per_gpu: Annotated[int, Field(ge=1)] | None = None
    memory_mib_per_gpu: Annotated[int, Field(ge=1)] | None = None


class PserverResources(BaseModel):
    """A suite's `pserver`: what each parameter-server node asks for. Never GPUs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vcpus: Annotated[int, Field(ge=1)] | None = None
    memory_mib: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_gpus(cls, data: Any) -> Any:
        if isinstance(data, dict) and "gpus" in data:
            raise ValueError(
                "gpus: a parameter server asks for no GPU (it runs on CPU instance types); "
                "remove the field"
            )
        return data


@dataclass(frozen=True)
class Sizing:
    """The stack's defaults, which a suite's `resources` and `pserver` override."""

    vcpus_per_gpu: int = 10
    memory_mib_per_gpu: int = 120_000
    pserver_vcpus: int = 8
    pserver_memory_mib: int = 16_000


@dataclass(frozen=True)
class InstanceShape:
    name: str
    vcpus: int
    gpus: int
    memory_mib: int
    gpu_model: str | None = None

    def fits(self, request: NodeRequest) -> bool:
        return (
            request.gpus <= self.gpus
            and request.vcpus <= self.vcpus
            and request.memory_mib <= self.memory_mib * USABLE_MEMORY
        )


@dataclass(frozen=True)
class Fleet:
    """What the stack's compute environment can give."""

    max_vcpus: int
    gpu_types: tuple[InstanceShape, ...]
    pserver_type: InstanceShape | None = None  # None: pservers run on the GPU types
    sizing: Sizing = Sizing()


@dataclass(frozen=True)
class NodeRequest:
    role: str
    gpus: int
    vcpus: int
    memory_mib: int
    # the one instance type its node range is pinned to (multi-node jobs only)
    instance_type: str | None = None

    def resource_requirements(self) -> list[dict[str, str]]:
        """As Batch's SubmitJob takes them: no GPU entry at all for a node without GPUs."""
        wanted = [("GPU", self.gpus), ("VCPU", self.vcpus), ("MEMORY", self.memory_mib)]
        return [{"type": kind, "value": str(value)} for kind, value in wanted if value]


@dataclass(frozen=True)
class Placement:
    """Each role's request, and the least the config takes of the compute environment."""

    trainer: NodeRequest
    pserver: NodeRequest | None
    vcpus: int

    def request_for(self, role: str) -> NodeRequest:
        if role == "pserver" and self.pserver is not None:
            return self.pserver
        return self.trainer


@dataclass(frozen=True)
class Refusal:
    """Why a config can never be placed, with the arithmetic, as its status says it."""

    reason: str


def _smallest(types: Sequence[InstanceShape], request: NodeRequest) -> InstanceShape | None:
    fitting = [t for t in types if t.fits(request)]
    return min(fitting, key=lambda t: (t.vcpus, t.memory_mib, t.name), default=None)


def _shapes(types: Sequence[InstanceShape]) -> str:
    return ", ".join(
        f"{t.name}: {t.gpus} GPUs, {t.vcpus} vCPUs, {int(t.memory_mib * USABLE_MEMORY)} MiB usable"
        for t in types
    )


def _no_fit(config: str, request: NodeRequest, types: Sequence[InstanceShape], why: str) -> str:
    return (
        f"{config}: a {request.role} node asks for {request.gpus} GPUs, {request.vcpus} vCPUs "
        f"and {request.memory_mib} MiB ({why}); no instance type has that ({_shapes(types)})"
    )


def place(
    spec: ConfigSpec,
    fleet: Fleet,
    resources: TrainerResources | None = None,
    pserver: PserverResources | None = None,
) -> Placement | Refusal:
    """Each role's request and the config's least vCPUs, or why it can never be placed."""
    sizing = fleet.sizing
    per_gpu_vcpus = (resources and resources.vcpus_per_gpu) or sizing.vcpus_per_gpu
    per_gpu_memory = (resources and resources.memory_mib_per_gpu) or sizing.memory_mib_per_gpu
    gpus = spec.gpus_per_trainer
    trainer = NodeRequest("trainer", gpus, per_gpu_vcpus * gpus, per_gpu_memory * gpus)
    trainer_type = _smallest(fleet.gpu_types, trainer)
    if trainer_type is None:
        why = (
            f"resources.vcpus_per_gpu {per_gpu_vcpus} and resources.memory_mib_per_gpu "
            f"{per_gpu_memory} x {gpus} GPUs"
        )
        return Refusal(_no_fit(spec.name, trainer, fleet.gpu_types, why))
    multinode = spec.nodes > 1
    if multinode and spec.nodes > BATCH_MAX_NODES:
        return Refusal(
            f"{spec.name} needs {spec.nodes} nodes; a Batch multi-node job has at most "
            f"{BATCH_MAX_NODES}"
        )
    if multinode:
        trainer = NodeRequest(
            trainer.role, gpus, trainer.vcpus, trainer.memory_mib, trainer_type.name
        )
    vcpus = spec.trainers * trainer_type.vcpus
    parts = [f"{spec.trainers} x {trainer_type.name} of {trainer_type.vcpus} vCPUs"]
    server = None
    if spec.pservers:
        server = NodeRequest(
            "pserver",
            0,
            (pserver and pserver.vcpus) or sizing.pserver_vcpus,
            (pserver and pserver.memory_mib) or sizing.pserver_memory_mib,
        )
        types = (fleet.pserver_type,) if fleet.pserver_type else fleet.gpu_types
        server_type = _smallest(types, server)
        if server_type is None:
            why = f"pserver.vcpus {server.vcpus}, pserver.memory_mib {server.memory_mib}"
            return Refusal(_no_fit(spec.name, server, types, why))
        server = NodeRequest("pserver", 0, server.vcpus, server.memory_mib, server_type.name)
        vcpus += spec.pservers * server_type.vcpus
        parts.append(f"{spec.pservers} x {server_type.name} of {server_type.vcpus}")
    if vcpus > fleet.max_vcpus:
        return Refusal(
            f"{spec.name} needs {spec.nodes} nodes / {vcpus} vCPUs; MaxvCpus is "
            f"{fleet.max_vcpus} ({' + '.join(parts)})"
        )
    return Placement(trainer, server, vcpus)
