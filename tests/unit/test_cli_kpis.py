"""`distkpi kpis`: the example run, its contract, and unusable input."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from distkpi_cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "seed-run"
SCHEMAS = ROOT / "layers" / "distkpi" / "distkpi" / "schemas"


def schema(name: str) -> dict[str, object]:
    return json.loads((SCHEMAS / name).read_text())  # type: ignore[no-any-return]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(["kpis", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_example_values_check_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, str(EXAMPLE))
    jsonschema.validate(out, schema("kpis.schema.json"))
    assert set(out) == {
        "run_id",
        "model",
        "base_config",
        "accuracy_direction",
        "gpu_hours",
        "configs",
    }
    assert out["base_config"] == "1x1"
    configs = out["configs"]
    assert list(configs) == ["1x1", "1x8", "2x8-4ps", "4x8-8ps"]
    for name, cfg in configs.items():
        assert cfg["status"] == "ok", (name, cfg["problems"])
        assert cfg["problems"] == []
        assert cfg["efficiency"] == pytest.approx(
            cfg["speedup"] / (cfg["gpus"] / configs["1x1"]["gpus"])
        )
        assert cfg["speedup"] == pytest.approx(cfg["throughput"] / configs["1x1"]["throughput"])
    # The 4x8 config: the sum over four trainer logs of their pass means after warm-up.
    assert configs["4x8-8ps"]["throughput"] == pytest.approx(2342.5, rel=0.02)
    assert configs["4x8-8ps"]["pserver_gpu_memory_mib"] == 2304
    assert configs["1x8"]["trainer_gpu_memory_mib"] == 12104
    assert configs["1x1"]["pserver_gpu_memory_mib"] is None
    assert configs["2x8-4ps"]["time_to_accuracy_s"] == pytest.approx(81.0, abs=1)


def test_example_files_follow_the_contract() -> None:
    jsonschema.validate(json.loads((EXAMPLE / "run.json").read_text()), schema("run.schema.json"))
    manifests = sorted(EXAMPLE.glob("*/node-*.json"))
    assert len(manifests) == 1 + 1 + 6 + 12
    for path in manifests:
        jsonschema.validate(json.loads(path.read_text()), schema("node.schema.json"))


def test_example_is_what_the_generator_makes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "generate.py"), str(tmp_path)], check=True
    )
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    kept = sorted(p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*") if p.is_file())
    assert made == kept
    for rel in made:
        assert (tmp_path / rel).read_bytes() == (EXAMPLE / rel).read_bytes(), rel


def test_table_has_kpi_rows_by_config_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kpis", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(line for line in out if line.startswith("KPI"))
    assert header.split() == ["KPI", "1x1", "1x8", "2x8-4ps", "4x8-8ps"]
    rows = {line.split("  ")[0].strip() for line in out}
    assert {"speedup", "efficiency", "throughput (samples/s)", "test accuracy"} <= rows
    assert "time to acc >= 0.6 (s)" in rows


def test_overrides_change_the_computation(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, str(EXAMPLE), "--target-accuracy", "0.99", "--accuracy-pass", "0")
    cfg = out["configs"]["1x1"]
    assert cfg["time_to_accuracy_s"] is None
    assert cfg["test_accuracy"] == pytest.approx(0.312, abs=0.001)


def test_failed_configs_still_exit_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = json.loads((EXAMPLE / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps(run))
    out = run_json(capsys, str(tmp_path))
    jsonschema.validate(out, schema("kpis.schema.json"))
    assert {c["status"] for c in out["configs"].values()} == {"incomplete"}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.write_text("x"), "is not a folder"),
        (lambda p: p.mkdir(), "no run.json"),
        (lambda p: (p.mkdir(), (p / "run.json").write_text("{")), "run.json is not JSON"),
        (
            lambda p: (p.mkdir(), (p / "run.json").write_text('{"schema": 2}')),
            "run.json does not follow schema 1",
        ),
    ],
)
def test_unusable_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, setup: object, message: str
) -> None:
    target = tmp_path / "target"
    setup(target)  # type: ignore[operator]
    assert main(["kpis", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def _masks_folder(root: Path) -> Path:
    """A Mask R-CNN-shaped run folder: eval_accuracy objects of BBOX and SEGM."""
    run = json.loads((EXAMPLE / "run.json").read_text())
    run["configs"] = [c for c in run["configs"] if c["name"] == "1x1"]
    root.mkdir()
    (root / "run.json").write_text(json.dumps(run))
    lines = [{"key": "run_start", "value": None, "time_ms": 0, "metadata": {}}]
    for i, (bbox, segm) in enumerate([(0.30, 0.28), (0.378, 0.3392)]):
        value = {"BBOX": bbox, "SEGM": segm}
        lines.append(
            {
                "key": "eval_accuracy",
                "value": value,
                "time_ms": (i + 1) * 600_000,
                "metadata": {"epoch_num": i},
            }
        )
    log = "".join(":::MLLOG " + json.dumps(r) + "\n" for r in lines)
    (root / "1x1").mkdir()
    (root / "1x1" / "trainer-0.log").write_text(log)
    manifest = {
        "schema": 1,
        "node": 0,
        "exit_code": 0,
        "started_at": "2026-11-30T00:00:00Z",
        "finished_at": "2026-11-30T00:30:00Z",
        "files": [{"path": "trainer-0.log", "role": "trainer", "rank": 0, "kind": "log"}],
    }
    (root / "1x1" / "node-0.json").write_text(json.dumps(manifest))
    return root


def test_a_target_of_named_parts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = str(_masks_folder(tmp_path / "masks"))
    out = run_json(capsys, folder, "--target-accuracy", "BBOX=0.377,SEGM=0.339")
    jsonschema.validate(out, schema("kpis.schema.json"))
    cfg = out["configs"]["1x1"]
    assert cfg["time_to_accuracy_s"] == pytest.approx(1200.0)
    assert cfg["test_accuracy"] == pytest.approx(0.378)
    assert cfg["test_accuracy_parts"] == {"BBOX": 0.378, "SEGM": 0.3392}
    out = run_json(capsys, folder, "--target-accuracy", "BBOX=0.377,SEGM=0.34")
    assert out["configs"]["1x1"]["time_to_accuracy_s"] is None
    assert main(["kpis", folder, "--target-accuracy", "SEGM=0.339,BBOX=0.377"]) == 0
    table = capsys.readouterr().out
    assert "time to acc >= SEGM=0.339,BBOX=0.377 (s)" in table
    assert "BBOX=0.3780,SEGM=0.3392" in table


def test_the_accuracy_direction(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = str(_masks_folder(tmp_path / "masks"))
    out = run_json(capsys, folder, "--target-accuracy", "0.3", "--accuracy-direction", "lower")
    assert out["accuracy_direction"] == "lower"
    assert out["configs"]["1x1"]["time_to_accuracy_s"] == pytest.approx(600.0)  # BBOX 0.30
    assert main(["kpis", folder, "--target-accuracy", "2.69", "--accuracy-direction", "lower"]) == 0
    assert "time to acc <= 2.69 (s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--target-accuracy", "2.69", "--accuracy-direction", "higher"],
            "less than or equal to 1",
        ),
        (["--target-accuracy", "-1", "--accuracy-direction", "lower"], "greater than 0"),
        (["--target-accuracy", "nan"], "finite number"),
    ],
)
def test_a_target_the_direction_cannot_reach_exits_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["kpis", str(EXAMPLE), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("distkpi kpis: target_accuracy") and message in err


def test_a_target_above_1_without_a_direction_is_read_with_a_problem_saying_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the seed run's run.json states no accuracy_direction and its logs name no benchmark
    assert main(["kpis", str(EXAMPLE), "--target-accuracy", "2.69"]) == 0
    out = capsys.readouterr().out
    assert (
        "1x1: target_accuracy 2.69 is above 1, but run.json states no accuracy_direction and "
        "no log names a benchmark that fixes it: read as higher is better"
    ) in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--target-accuracy", "BBOX=0.3,BBOX=0.4"],
            "argument --target-accuracy: 'BBOX=0.3,BBOX=0.4': give X or NAME=X[,NAME=X...] "
            "('BBOX=0.4' is not NAME=X with a new NAME)",
        ),
        (
            ["--target-accuracy", "BBOX=x"],
            "argument --target-accuracy: 'BBOX=x': give X or NAME=X[,NAME=X...] (could not "
            "convert string to float: 'x')",
        ),
        (
            ["--accuracy-direction", "up"],
            "argument --accuracy-direction: invalid choice: 'up' (choose from 'higher', 'lower')",
        ),
    ],
)
def test_unreadable_accuracy_flags_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kpis", str(EXAMPLE), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: distkpi kpis ")
    assert err.splitlines()[-1] == f"distkpi kpis: {message}"


@pytest.mark.parametrize("argv", [["--target-accuracy", "BBOX"], ["--target-accuracy", "=0.3"]])
def test_a_target_without_a_number_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kpis", str(EXAMPLE), *argv]) == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith(
            f"distkpi kpis: argument --target-accuracy: {argv[1]!r}: give X or NAME=X[,NAME=X...]"
        )
    )


def test_a_diagnosed_config_s_diagnosis_is_given_with_its_kpis(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from distkpi.domain.diagnosis.breakdown import reduce_trace
    from distkpi.domain.diagnosis.compare import diagnose
    from distkpi.domain.diagnosis.trace import read_trace

    folder = tmp_path / "run"
    shutil.copytree(EXAMPLE, folder)
    traces = ROOT / "tests" / "data" / "traces" / "trace_diff"
    base, head = (
        reduce_trace(read_trace((traces / name).read_bytes()))
        for name in ("control.json.gz", "test.json.gz")
    )
    stored = diagnose({"trainer": [base]}, {"trainer": [head]}).to_json()
    stored |= {"run_id": "r-d", "gpu_hours": 0.5, "line": "compute +83%", "problems": []}
    (folder / "1x8" / "diagnosis.json").write_text(json.dumps(stored))
    out = run_json(capsys, str(folder))
    jsonschema.validate(out, schema("kpis.schema.json"))
    assert out["configs"]["1x8"]["diagnosis"] == stored
    assert out["configs"]["1x8"]["diagnosis"]["largest_change"] == "compute"
    assert "diagnosis" not in out["configs"]["1x1"]
