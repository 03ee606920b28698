"""The collector acts on node and look manifests only: S3 notifies it of keys under runs/
ending .json (what its prefix and suffix rules can say), a node's rendezvous record does
not end so, and every other key is told apart by its name before anything is read or wired,
and counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from distkpi.entry import collector
from distkpi_cli.local.template import load_template, resources_of_type
from distkpi_cli.node.rendezvous import FOLDER, record_index, record_name

ROOT = Path(__file__).resolve().parents[2]

# what a paired seed-matrix run writes under runs/ besides its manifests
NOT_MANIFESTS = [
    "runs/r1/run.json",
    "runs/r1/kpis.json",
    "runs/r1/2x8-4ps/pair-1/decision.json",
    "runs/r1/2x8-4ps/golden.json",
    "runs/r1/2x8-4ps/logs/metrics.json",  # a .json file a command left
    "runs/r1/2x8-4ps/pair-1/a/logs/trainer.0.json",
]


def test_the_notification_takes_only_json_keys_under_runs() -> None:
    template = load_template((ROOT / "template.yaml").read_text())
    function = resources_of_type(template, "AWS::Serverless::Function")["CollectorFunction"]
    (source,) = function["Events"].values()
    assert source["Properties"]["Filter"]["S3Key"]["Rules"] == [
        {"Name": "prefix", "Value": "runs/"},
        {"Name": "suffix", "Value": ".json"},
    ]


def test_a_rendezvous_record_is_named_outside_the_notifications_suffix() -> None:
    key = f"runs/r1/2x8-4ps/{FOLDER}run-2/{record_name(3)}"
    assert key == "runs/r1/2x8-4ps/rendezvous/run-2/node-3.endpoint"
    assert not key.endswith(".json")
    assert record_index(record_name(3)) == 3
    assert record_index("node-03.endpoint") is None
    assert record_index("node-3.json") is None


def test_every_other_key_is_ignored_before_anything_is_read_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[str] = []

    def never_wired() -> None:
        raise AssertionError("the collector was wired for a key it does not act on")

    monkeypatch.setattr(collector, "fanin", never_wired)
    monkeypatch.setattr(collector, "count", lambda name, value=1: counted.append(name))
    assert collector.handle_keys(NOT_MANIFESTS) == 0
    assert counted == ["ObjectsNotManifests"] * len(NOT_MANIFESTS)
