"""EC2's instance types: how many GPUs, vCPUs and MiB each has, asked once per container."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client
from distkpi.domain.planning.sizing import InstanceShape
from distkpi.exceptions import LaunchError


def shape_of(described: dict[str, Any]) -> InstanceShape:
    gpus = described.get("GpuInfo", {}).get("Gpus", [])
    models = sorted({f"{g.get('Manufacturer', '')} {g.get('Name', '')}".strip() for g in gpus})
    return InstanceShape(
        name=described["InstanceType"],
        vcpus=int(described["VCpuInfo"]["DefaultVCpus"]),
        gpus=sum(int(g.get("Count", 0)) for g in gpus),
        memory_mib=int(described["MemoryInfo"]["SizeInMiB"]),
        gpu_model="+".join(models) or None,
    )


class InstanceCatalog:
    def __init__(self, ec2: Any | None = None) -> None:
        self._ec2 = ec2
        self._known: dict[str, InstanceShape] = {}

    @property
    def ec2(self) -> Any:
        if self._ec2 is None:
            self._ec2 = client("ec2")
        return self._ec2

    def shapes(self, names: Sequence[str]) -> tuple[InstanceShape, ...]:
        """The shapes of ``names``, in their order; LaunchError naming a type EC2 does not
        know (a stack parameter with a typo)."""
        wanted = [n for n in dict.fromkeys(names) if n not in self._known]
        if wanted:
            try:
                pages = self.ec2.get_paginator("describe_instance_types").paginate(
                    InstanceTypes=wanted
                )
                for page in pages:
                    for described in page["InstanceTypes"]:
                        shape = shape_of(described)
                        self._known[shape.name] = shape
            except ClientError as exc:
                raise LaunchError(f"instance types {', '.join(wanted)}: {exc}") from exc
        missing = [n for n in names if n not in self._known]
        if missing:
            raise LaunchError(f"EC2 knows no instance type {', '.join(missing)}")
        return tuple(self._known[n] for n in names)
