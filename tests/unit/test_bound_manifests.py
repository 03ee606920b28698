"""Signed means bound: a manifest names its run, config and node inside what is signed, and
is refused, naming the file, wherever else it is found, even under the same key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distkpi.domain.contracts import ConfigSpec
from distkpi.domain.kpis.runfolder import Reading, gather_config, read_manifest
from distkpi.domain.signing import config_key, sign
from distkpi.exceptions import ContractError
from distkpi_cli.localfs import LocalRunSource

KEY = "k" * 64
SPEC = ConfigSpec(name="1x1", trainers=1, gpus_per_trainer=1, pservers=0, batch_size=64, nodes=1)


def manifest(**identity: object) -> dict[str, object]:
    body: dict[str, object] = {"schema": 1, "exit_code": 0, "files": []}
    body |= {"started_at": "2026-11-30T03:00:00Z", "finished_at": "2026-11-30T03:00:05Z"}
    return body | identity


def folder(tmp_path: Path, config: str, node: int, content: dict[str, object]) -> LocalRunSource:
    (tmp_path / config).mkdir(exist_ok=True)
    (tmp_path / config / f"node-{node}.json").write_text(json.dumps(content))
    return LocalRunSource(tmp_path)


def test_a_manifest_signed_for_its_place_is_read(tmp_path: Path) -> None:
    signed = sign(KEY, manifest(run_id="r1", config="1x1", node=0))
    got = read_manifest(folder(tmp_path, "1x1", 0, signed), "1x1", 0, KEY, "r1")
    assert (got.run_id, got.config, got.node) == ("r1", "1x1", 0)


@pytest.mark.parametrize(
    ("identity", "why"),
    [
        (
            {"run_id": "r0", "config": "1x1", "node": 0},
            "is signed for node 0 of config 1x1 of run r0",
        ),
        (
            {"run_id": "r1", "config": "1x8", "node": 0},
            "is signed for node 0 of config 1x8 of run r1",
        ),
        ({"run_id": "r1", "config": "1x1", "node": 1}, "says it is node 1"),
        ({"node": 0}, "does not say which run and config it is for"),
    ],
)
def test_a_manifest_copied_to_another_run_config_or_node_is_refused_naming_the_file(
    tmp_path: Path, identity: dict[str, object], why: str
) -> None:
    source = folder(tmp_path, "1x1", 0, sign(KEY, manifest(**identity)))
    with pytest.raises(ContractError) as refused:
        read_manifest(source, "1x1", 0, KEY, "r1")
    assert str(refused.value).startswith("1x1/node-0.json ") and why in str(refused.value)
    evidence = gather_config(source, SPEC, Reading(KEY, run_id="r1"))
    assert evidence.manifests == {} and why in evidence.invalid_nodes[0]


def test_an_unsigned_node_file_is_an_invalid_node_not_a_reported_one(tmp_path: Path) -> None:
    source = folder(tmp_path, "1x1", 0, manifest(run_id="r1", config="1x1", node=0))
    evidence = gather_config(source, SPEC, Reading(KEY, run_id="r1"))
    assert evidence.manifests == {}
    assert evidence.invalid_nodes[0] == (
        "1x1/node-0.json is not signed with this config's key (forged?)"
    )


def test_each_config_of_each_run_has_a_key_of_its_own_from_the_master_secret() -> None:
    keys = {config_key("master", r, c) for r in ("r1", "r2") for c in ("1x1", "1x8")}
    assert len(keys) == 4 and all(len(k) == 64 for k in keys)
    assert config_key("master", "r1", "1x1") == config_key("master", "r1", "1x1")
    assert config_key("another master", "r1", "1x1") not in keys
    # the run id and config name are kept apart: r1 + "1x1" is not "r11" + "x1"
    assert config_key("master", "r11", "x1") not in keys
