"""`distkpi judge`: the collector's verdict, replayed on a run folder and a history file."""

import csv
import json
import random
from pathlib import Path

import pytest

from distkpi.adapters.localfs import LocalRunSource
from distkpi.cli import main
from distkpi.domain.judging import KPIS
from distkpi.domain.runfolder import compute_run_kpis
from tests.unit.test_cli_kpis import EXAMPLE

COLUMNS = ["finished_at", "repo", "branch", "model", "config", "sha", "run_id", "kpi", "value"]


def history(path: Path, scale: dict[str, float] | None = None, runs: int = 12) -> Path:
    """``runs`` earlier develop runs around the example's own values (2% noise)."""
    scale = scale or {}
    rng = random.Random(3)
    example = compute_run_kpis(LocalRunSource(EXAMPLE)).to_json()["configs"]
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        for i in range(runs):
            for config, kpis in example.items():
                for kpi in KPIS:
                    value = kpis[kpi]
                    if value is not None:
                        value *= scale.get(kpi, 1.0) * (1 + 0.02 * rng.gauss(0, 1))
                    writer.writerow(
                        [
                            f"2026-11-{i + 1:02d}T00:00:00Z",
                            "PaddlePaddle/Paddle",
                            "develop",
                            "resnet50",
                            config,
                            f"{i:040x}",
                            f"run-{i}",
                            kpi,
                            "" if value is None else value,
                        ]
                    )
    return path


def judged(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:  # type: ignore[type-arg]
    assert main(["judge", str(EXAMPLE), *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_a_run_like_its_history_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = judged(capsys, "--history", str(history(tmp_path / "h.csv")))
    assert {tuple(sorted(j)) for j in out} == {
        ("baseline", "confidence", "config", "high", "kpi", "low", "runs", "value", "verdict")
    }
    verdicts = {(j["config"], j["kpi"]): j["verdict"] for j in out}
    assert verdicts[("4x8-8ps", "throughput")] == "pass"
    assert verdicts[("1x1", "pserver_gpu_memory_mib")] == "no-baseline"  # no pservers there
    assert "regressed" not in verdicts.values()


def test_a_slower_run_regresses(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = history(tmp_path / "h.csv", scale={"throughput": 1.3})
    out = judged(capsys, "--history", str(path))
    tput = [j for j in out if j["kpi"] == "throughput"]
    assert {j["verdict"] for j in tput} == {"regressed"}
    assert all(j["value"] < j["low"] < j["baseline"] for j in tput)
    assert main(["judge", str(EXAMPLE), "--history", str(path)]) == 0
    text = capsys.readouterr().out
    assert "failure: 32 GPUs 19.3x (+1%), eff 0.60, TTA 46s, acc Δ0.0002: 1x1 tput -24%;" in text


def test_the_suite_decides_what_is_enforced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    suite = tmp_path / "suite.yaml"
    original = Path(__file__).resolve().parents[2] / "infra" / "suites" / "resnet50.yaml"
    text = original.read_text().replace("enforced: [throughput, speedup,", "enforced: [speedup,")
    suite.write_text(text)
    path = history(tmp_path / "h.csv", scale={"throughput": 1.3})
    out = judged(capsys, "--history", str(path), "--suite", str(suite))
    assert {j["verdict"] for j in out if j["kpi"] == "throughput"} == {"not-enforced"}


def test_unusable_history_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("finished_at,kpi\n2026-01-01,throughput\n")
    assert main(["judge", str(EXAMPLE), "--history", str(bad)]) == 2
    assert "missing column(s) repo" in capsys.readouterr().err
