"""`distkpi diagnose RUN_FOLDER` on HTA's trace-diff pair (tests/data/traces)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from distkpi_cli.main import main

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("diag")
    for side, name in (("base", "control"), ("head", "test")):
        (folder / side / "trainer").mkdir(parents=True)
        shutil.copy(TRACES / "trace_diff" / f"{name}.json.gz", folder / side / "trainer")
    (folder / "base" / "commit").write_text("aaaa\n")
    (folder / "head" / "commit").write_text("bbbb\n")
    return folder


def test_it_prints_the_one_line_summary(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(run)]) == 0
    assert capsys.readouterr().out == (
        "step time +64% (76.8 -> 126 ms per step): compute +83% per step (47 -> 85.8 ms), "
        "communication +44%\n"
    )


def test_json_is_the_diagnosis_contract(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(run), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["diagnosis"]
    assert set(d) == {"base_sha", "head_sha", "steps", "roles", "largest_change", "top_ops",
                      "traces"}  # fmt: skip
    assert (d["base_sha"], d["head_sha"], d["steps"], d["largest_change"]) == (
        "aaaa",
        "bbbb",
        5,
        "compute",
    )
    base = d["roles"]["trainer"]["base"]
    for key in ("compute_s", "communication_s", "exposed_communication_s", "idle_s", "data_s",
                "other_s"):  # fmt: skip
        assert base["spread"][key] == [base[key], base[key]]  # one rank
    assert base["collectives"]["all_reduce"]["count"] == 3
    assert d["traces"]["head"]["trainer"] == [
        {"file": "head/trainer/test.json.gz", "rank": 1, "bytes": 1568914, "steps": 5}
    ]


def test_a_folder_without_head_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "base").mkdir()
    assert main(["diagnose", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"distkpi diagnose: {tmp_path}: no head/ folder of traces\n"


def test_a_broken_trace_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for side in ("base", "head"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "rank-0.json").write_text("{}")
    assert main(["diagnose", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"distkpi diagnose: {tmp_path}/base/rank-0.json: not a Chrome trace: no traceEvents list\n"
    )
