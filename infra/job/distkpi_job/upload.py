"""The node's files to the run folder: logs first, the node manifest last."""

from __future__ import annotations

import json
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


def upload(prefix: str, node: int, files: list[NodeFile], manifest: dict[str, Any]) -> None:
    """``prefix`` is s3://bucket/runs/<run>/<config>/; the manifest goes up after the files."""
    url = urlparse(prefix)
    bucket, key = url.netloc, url.path.lstrip("/")
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
