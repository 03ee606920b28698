"""The node writes its manifests as the collector's model reads them (domain/contracts.py
`NodeManifest`), through `as_contract` in node/runner.py."""

from __future__ import annotations

from typing import Any

from distkpi.domain.contracts import parse_node_manifest
from distkpi_cli.node.runner import as_contract

FIELDS: dict[str, Any] = {
    "schema": 1,
    "run_id": "r1",
    "config": "c",
    "node": 0,
    "exit_code": 0,
    "started_at": "2026-01-02T03:04:05Z",
    "finished_at": "2026-01-02T03:14:05Z",
    "files": [{"path": "logs/trainer-0.log", "role": "trainer", "rank": 0, "kind": "log"}],
    "wall_s": 600.0,
    "hardware": {"instance_type": "p4d.24xlarge", "gpu_model": "A100", "gpu_count": 8},
}


def test_a_manifest_within_the_contract_is_written_as_given() -> None:
    written = as_contract(FIELDS)
    assert written == FIELDS
    assert parse_node_manifest(written, "node-0.json").files[0].kind == "log"


def test_a_manifest_that_breaks_the_contract_is_written_failed_and_saying_why() -> None:
    long = FIELDS | {"hardware": FIELDS["hardware"] | {"problem": "x" * 1001}}
    written = as_contract(long)
    assert written["exit_code"] == 1 and written["files"] == []
    assert written["problem"].startswith("the node's manifest breaks the contract: hardware")
    assert parse_node_manifest(written, "node-0.json").run_id == "r1"
