"""The node's files to the run folder: logs first, the node manifest last."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3


@dataclass(frozen=True)
class NodeFile:
    local: Path
    role: str
    rank: int
    kind: str

    @property
    def path(self) -> str:
        return f"logs/{self.local.name}"


def _bucket_and_key(prefix: str) -> tuple[str, str]:
    url = urlparse(prefix)
    return url.netloc, url.path.lstrip("/")


def upload(prefix: str, node: int, files: list[NodeFile], manifest: dict[str, Any]) -> None:
    """``prefix`` is s3://bucket/runs/<run>/<config>/; the manifest goes up after the files."""
    bucket, key = _bucket_and_key(prefix)
    s3 = boto3.client("s3")
    present = [f for f in files if f.local.exists()]
    for f in present:
        s3.upload_file(str(f.local), bucket, key + f.path)
    manifest = {
        **manifest,
        "files": [
            {"path": f.path, "role": f.role, "rank": f.rank, "kind": f.kind} for f in present
        ],
    }
    s3.put_object(
        Bucket=bucket,
        Key=f"{key}node-{node}.json",
        Body=json.dumps(manifest).encode(),
        ContentType="application/json",
    )


def wait_for_manifests(
    prefix: str,
    nodes: list[int],
    timeout_s: float,
    *,
    poll_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """The main node's last step: Batch stops every other node of a multi-node job when the
    main node exits, so it waits (at most ``timeout_s``) until their manifests are in the run
    folder. The nodes still missing at the end."""
    bucket, key = _bucket_and_key(prefix)
    s3 = boto3.client("s3")
    deadline = clock() + timeout_s
    while True:
        listed = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{key}node-")
        present = {o["Key"] for page in listed for o in page.get("Contents", [])}
        missing = [n for n in nodes if f"{key}node-{n}.json" not in present]
        if not missing or clock() >= deadline:
            return missing
        sleep(poll_s)
