"""`distkpi judge`: the collector's verdict, replayed on a run folder and a history file."""

import csv
import json
import random
import re
import shutil
import statistics
from pathlib import Path

import pytest

from distkpi.domain.judging.settings import KPIS
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.domain.records import ResetRecord
from distkpi_cli.history_files import read_resets_csv, write_resets
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.main import main
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


# eight runs whose throughput factors have mean 1 and a sample spread of exactly 18%
SPREAD = [1.5, -1.5, 1.0, -1.0, 0.6, -0.6, 0.2, -0.2]
FACTORS = [1 + 0.18 * z / statistics.stdev(SPREAD) for z in SPREAD]


def _scale(text: str, factor: float) -> str:
    def times(match: re.Match[str]) -> str:
        return f"{match.group(1)}{float(match.group(2)) * factor:.4f}"

    for pattern in (r'("throughput": )([0-9.]+)', r"(Training performance = )([0-9.]+)"):
        text = re.sub(pattern, times, text)
    return re.sub(r"(train_speed = )([0-9.]+)", times, text)


def scaled_run(source: Path, target: Path, factor: float, sha: str | None = None) -> Path:
    """A copy of a run folder whose trainers report ``factor`` times the throughput."""
    shutil.copytree(source, target)
    for log in target.glob("*/logs/*.log"):
        log.write_text(_scale(log.read_text(), factor))
    if sha is not None:
        spec = json.loads((target / "run.json").read_text())
        (target / "run.json").write_text(json.dumps({**spec, "sha": sha}))
    return target


def standard_normal(n: int, seed: int) -> list[float]:
    """n draws rescaled to mean 0 and sample deviation 1 exactly."""
    rng = random.Random(seed)
    z = [rng.gauss(0, 1) for _ in range(n)]
    mean, sd = statistics.fmean(z), statistics.stdev(z)
    return [(v - mean) / sd for v in z]


def noisy_history(path: Path, cv: float, runs: int = 30) -> Path:
    """Develop runs of the example whose throughput varies by exactly ``cv`` per config,
    around the example's own; speedups follow from them."""
    example = compute_run_kpis(LocalRunSource(EXAMPLE)).to_json()["configs"]
    noise = {c: standard_normal(runs, 100 + seed) for seed, c in enumerate(example)}
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        for i in range(runs):
            tput = {c: k["throughput"] * (1 + cv * noise[c][i]) for c, k in example.items()}
            for config in example:
                values = {"throughput": tput[config], "speedup": tput[config] / tput["1x1"]}
                for kpi, value in values.items():
                    at = f"2026-11-{i // 24 + 1:02d}T{i % 24:02d}:00:00Z"
                    where = ["PaddlePaddle/Paddle", "develop", "resnet50", config]
                    writer.writerow([at, *where, f"{i:040x}", f"run-{i}", kpi, value])
    return path


@pytest.mark.parametrize(
    ("change", "verdict"), [(1.0, "pass"), (0.75, "regressed"), (1.35, "improved")]
)
def test_eight_runs_of_one_commit_tell_a_25_percent_drop_from_18_percent_noise(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, change: float, verdict: str
) -> None:
    suite = tmp_path / "suite.yaml"
    original = Path(__file__).resolve().parents[2] / "infra" / "suites" / "resnet50.yaml"
    # eight runs of every config, not a confirmation sequence: judged at the suite's full rate
    text = re.sub(r"enforced: \[[^\]]*\]", "enforced: [throughput, speedup]", original.read_text())
    suite.write_text(re.sub(r"\n  confirm: .*", "", text))
    runs = [
        str(scaled_run(EXAMPLE, tmp_path / f"run-{i}", f * change)) for i, f in enumerate(FACTORS)
    ]
    history_file = noisy_history(tmp_path / "h.csv", 0.18)
    assert (
        main(["judge", *runs, "--history", str(history_file), "--suite", str(suite), "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    tput = [j for j in out if j["kpi"] == "throughput"]
    assert {j["runs"] for j in tput} == {8}
    assert {j["verdict"] for j in tput} == {verdict}
    # one run alone, at the same noise, cannot tell the drop
    if change == 0.75:
        assert (
            main(
                ["judge", runs[0], "--history", str(history_file), "--suite", str(suite), "--json"]
            )
            == 0
        )
        alone = json.loads(capsys.readouterr().out)
        assert "regressed" not in {j["verdict"] for j in alone if j["kpi"] == "throughput"}


def test_run_folders_of_different_commits_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = scaled_run(EXAMPLE, tmp_path / "other", 1.0, sha="1" * 40)
    path = history(tmp_path / "h.csv")
    assert main(["judge", str(EXAMPLE), str(other), "--history", str(path)]) == 2
    err = capsys.readouterr().err
    assert "run folders of different shas" in err and str(other) in err


def test_an_audited_reset_sets_the_history_before_it_aside_as_the_collector_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Given a history the run is 24% slower than, and a reset of 1x1's baseline after it
    path = history(tmp_path / "h.csv", scale={"throughput": 1.3})
    resets = tmp_path / "resets.csv"
    reset = ResetRecord(
        "PaddlePaddle/Paddle",
        "develop",
        "resnet50",
        "1x1",
        "new input pipeline",
        "lin",
        "2026-11-20",
    )
    with resets.open("w") as out:
        write_resets([reset], "csv", out)
    # Then 1x1 has no baseline left and is not judged regressed; the others still are
    out = judged(capsys, "--history", str(path), "--resets", str(resets))
    tput = {j["config"]: j["verdict"] for j in out if j["kpi"] == "throughput"}
    assert tput == {
        "1x1": "no-baseline",
        "1x8": "regressed",
        "2x8-4ps": "regressed",
        "4x8-8ps": "regressed",
    }
    assert read_resets_csv(resets) == [reset]


def test_a_resets_file_that_is_not_one_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "resets.csv"
    bad.write_text("config,at\n1x1,2026-11-20\n")
    code = main(
        ["judge", str(EXAMPLE), "--history", str(history(tmp_path / "h.csv")), "--resets", str(bad)]
    )
    assert code == 2
    assert "missing column(s) repo, branch, model, reason, who" in capsys.readouterr().err
