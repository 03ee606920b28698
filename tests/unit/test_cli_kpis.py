"""`distkpi kpis`: the example run, its contract, and unusable input."""

import json
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
    assert set(out) == {"run_id", "model", "base_config", "gpu_hours", "configs"}
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
