"""What a node ran on: its instance type and its GPUs, for its manifest.

The instance type comes from DISTKPI_INSTANCE_TYPE when the launcher knows it (`local` in
`distkpi local`), else from the instance metadata service (IMDSv2), else from the firmware's
product name, which Nitro instances set to their type. The stack's launch template keeps
IMDS one network hop away from containers, so on Batch the last is the usual answer. GPUs
come from `nvidia-smi --query-gpu=name`. What cannot be read is `unknown`, with a problem:
a run is never failed for it, and never compared with known hardware.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distkpi.domain.planning import jobenv
from distkpi_cli.node.secrets import without_secrets

UNKNOWN = "unknown"
LOCAL = "local"
IMDS = "http://169.254.169.254"
DMI = Path("/sys/devices/virtual/dmi/id")


@dataclass(frozen=True)
class Hardware:
    instance_type: str
    gpu_model: str
    gpu_count: int
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "instance_type": self.instance_type,
            "gpu_model": self.gpu_model,
            "gpu_count": self.gpu_count,
        }
        if self.problems:
            found["problem"] = "; ".join(self.problems)
        return found


def _imds_instance_type(env: Mapping[str, str], timeout_s: float = 1.0) -> str | None:
    """IMDSv2: a session token, then the instance type; None when it cannot be reached."""
    if env.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return None
    base = (env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or IMDS).rstrip("/")
    try:
        token_request = urllib.request.Request(
            f"{base}/latest/api/token",
            method="PUT",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"},
        )
        with urllib.request.urlopen(token_request, timeout=timeout_s) as answer:
            token = answer.read().decode()
        type_request = urllib.request.Request(
            f"{base}/latest/meta-data/instance-type",
            headers={"X-aws-ec2-metadata-token": token},
        )
        with urllib.request.urlopen(type_request, timeout=timeout_s) as answer:
            found = answer.read().decode().strip()
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return found or None


def _firmware_instance_type(dmi: Path) -> str | None:
    try:
        vendor = (dmi / "sys_vendor").read_text().strip()
        product = (dmi / "product_name").read_text().strip()
    except OSError:
        return None
    return product if vendor == "Amazon EC2" and "." in product else None


def instance_type(env: Mapping[str, str], dmi: Path = DMI) -> str | None:
    return env.get(jobenv.INSTANCE_TYPE) or _imds_instance_type(env) or _firmware_instance_type(dmi)


def gpu_names() -> list[str] | None:
    """One name per GPU nvidia-smi lists; None without a working nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
            env=without_secrets(os.environ),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()]


def read_hardware(env: Mapping[str, str], role: str, dmi: Path = DMI) -> Hardware:
    problems = []
    found_type = instance_type(env, dmi)
    if found_type is None:
        found_type = UNKNOWN
        problems.append("instance type unknown: no instance metadata service and no EC2 firmware")
    names = gpu_names()
    if names:
        return Hardware(found_type, "+".join(sorted(set(names))), len(names), tuple(problems))
    if role == "pserver":
        model = "none"  # it asked for no GPU
    elif found_type == LOCAL:
        model = "cpu"  # `distkpi local` trains on this machine's CPU when it has no GPU
    else:
        model = UNKNOWN
        problems.append("GPU model unknown: nvidia-smi is missing or failed")
    return Hardware(found_type, model, 0, tuple(problems))
