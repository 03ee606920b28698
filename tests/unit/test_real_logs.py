"""Real logs of real training runs (tests/data/real: provenance per folder) against the
numbers their authors published or their own lines define (tests/data/real/expected.json),
and golden `distkpi kpis --json` output for whole run folders built from them.

The log files are third-party data kept out of the repository, in `real/` of the shared data
folder beside the checkout (`<checkout>/../shared/real`, or the folder DISTKPI_REAL_LOGS
names); without it these tests are skipped, naming the folder.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.kpis.engine import NOT_REACHED, ConfigKpis
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.main import main

ROOT = Path(__file__).resolve().parents[2]
# entries with a `family` are the language-model logs, checked in test_real_llm_logs.py
EXPECTED = [
    e
    for e in json.loads((ROOT / "tests" / "data" / "real" / "expected.json").read_text())
    if "family" not in e
]
REAL = Path(os.environ.get("DISTKPI_REAL_LOGS", ROOT.parent / "shared" / "real"))
GOLDEN = ROOT / "tests" / "golden" / "real"
pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason=f"no real logs in {REAL} (set DISTKPI_REAL_LOGS to their folder)"
)

# Each benchmark's quality target as its MLPerf round's rules set it (the notes of each
# entry say the same): (target, direction).
TARGETS: dict[str, tuple[object, str]] = {
    "resnet": (0.759, "higher"),
    "bert": (0.720, "higher"),
    "maskrcnn": ({"BBOX": 0.377, "SEGM": 0.339}, "higher"),
    "rnnt": (0.058, "lower"),
    "gpt3": (2.69, "lower"),
    "llama2_70b_lora": (0.925, "lower"),
    "gnn": (0.72, "higher"),
}
V05_TARGET = 0.749  # the v0.5 ResNet log's own eval_target
# Lines of each format, so that a file carrying several is read by one reader at a time.
LINES_OF = {
    "mlperf_mllog": ":::MLLOG",
    "dllogger_text": "DLL ",
    "bert_final_dict": "'training_sequences_per_second'",
    "mxnet_speedometer": "Speed:",
}
# What distkpi does not read, and why (the report says so too).
NOT_READ = {
    ("dllogger_text", "gpu_memory_mib"): "GPU memory comes from nvidia-smi samples, not logs",
}
LAST_PASS = 10**9  # no such pass: the last evaluation is the test accuracy


def _target(path: str) -> tuple[object, str]:
    if path.startswith("mlperf_v05/"):
        return V05_TARGET, "higher"
    benchmark = Path(path).parent.name
    return TARGETS.get(benchmark, (0.5, "higher"))


@dataclass
class Node:
    files: list[tuple[str, str]]  # (name in the config folder, path under real/ )
    kind: str = "log"
    line_filter: str | None = None


def build_run(
    root: Path, target: object, direction: str, gpus: int, nodes: list[Node], model: str = "m"
) -> Path:
    """A run folder as the contract has it: run.json, one trainer config of ``gpus`` GPUs on
    len(nodes) nodes, each node's manifest naming its files."""
    root.mkdir(parents=True)
    trainers = len(nodes)
    run = {
        "schema": 1,
        "run_id": root.name,
        "repo": "real/logs",
        "sha": "0" * 40,
        "ref": "refs/heads/main",
        "model": model,
        "target_accuracy": target,
        "accuracy_direction": direction,
        "accuracy_pass": LAST_PASS,
        "accuracy_tolerance": 0.001,
        "configs": [
            {
                "name": "c",
                "trainers": trainers,
                "gpus_per_trainer": gpus // trainers,
                "pservers": 0,
                "batch_size": 1,
                "nodes": trainers,
            }
        ],
    }
    (root / "run.json").write_text(json.dumps(run))
    folder = root / "c"
    folder.mkdir()
    for index, node in enumerate(nodes):
        entries = []
        for name, source in node.files:
            data = (REAL / source).read_bytes()
            if node.line_filter is not None:
                kept = [
                    ln for ln in data.splitlines(keepends=True) if node.line_filter.encode() in ln
                ]
                data = b"".join(kept)
            (folder / name).write_bytes(data)
            entries.append({"path": name, "role": "trainer", "rank": index, "kind": node.kind})
        manifest = {
            "schema": 1,
            "node": index,
            "exit_code": 0,
            "started_at": "2026-11-30T00:00:00Z",
            "finished_at": "2026-11-30T01:00:00Z",
            "wall_s": 3600.0,
            "files": entries,
        }
        (folder / f"node-{index}.json").write_text(json.dumps(manifest))
    return root


def _entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['format']}:{entry['kpi']}:{entry['path']}:{entry['meaning']}"


def _config_for(entry: dict[str, Any], tmp_path: Path) -> ConfigKpis:
    path = entry["path"]
    target, direction = _target(path)
    gpus = 1
    nodes = [Node([("trainer.log", path)], line_filter=LINES_OF.get(entry["format"]))]
    if entry["meaning"] == "total" and "ENCNet" in path:
        # the 4-card run: all four workerlogs, of which only rank 0 logs training lines
        gpus = 4
        logs = [(f"workerlog.{i}", str(Path(path).parent / f"workerlog.{i}")) for i in range(4)]
        nodes = [Node(logs)]
    if entry["format"].startswith("nvidia_smi"):
        nodes = [Node([("trainer.csv", path)], kind="gpu_memory")]
    run = build_run(tmp_path / "run", target, direction, gpus, nodes)
    return compute_run_kpis(LocalRunSource(run)).configs[0]


KPI_OF = {
    "time_to_accuracy_s": lambda c: c.time_to_accuracy_s,
    "test_accuracy": lambda c: c.test_accuracy,
    "throughput": lambda c: c.throughput,
    "gpu_memory_mib": lambda c: c.trainer_gpu_memory_mib,
}


@pytest.mark.parametrize("entry", EXPECTED, ids=_entry_id)
def test_each_real_log_gives_its_published_number(entry: dict[str, Any], tmp_path: Path) -> None:
    if (entry["format"], entry["kpi"]) in NOT_READ:
        pytest.skip(NOT_READ[(entry["format"], entry["kpi"])])
    cfg = _config_for(entry, tmp_path)
    assert cfg.status == "ok", cfg.problems  # a missing KPI never fails the config alone
    value = KPI_OF[entry["kpi"]](cfg)
    expected = entry["value"]
    if entry["format"] == "dllogger_json" and entry["kpi"] == "test_accuracy":
        expected = expected / 100  # DeepLearningExamples logs top-1 in percent
    if expected is None:
        assert value is None, (value, cfg.problems)
        return
    assert value == pytest.approx(expected, rel=entry["tolerance_rel"], abs=1e-12), cfg.problems


def _aborted(entry: dict[str, Any]) -> bool:
    return entry["kpi"] == "time_to_accuracy_s" and "aborted" in entry["notes"]


@pytest.mark.parametrize("entry", [e for e in EXPECTED if _aborted(e)], ids=_entry_id)
def test_an_aborted_real_run_did_not_reach_its_target(
    entry: dict[str, Any], tmp_path: Path
) -> None:
    cfg = _config_for(entry, tmp_path)
    assert cfg.status == "ok" and cfg.converged is False
    assert NOT_REACHED in cfg.problems
    assert cfg.throughput is not None  # its throughput is not hidden


def test_an_rnnt_log_is_read_lower_is_better_as_mlperf_rules_say(tmp_path: Path) -> None:
    """Its submission_benchmark fixes the direction: read as higher-is-better, the first
    evaluation would reach a WER target at once."""
    path = "mlperf_mllog/v2.0/GIGABYTE/G492-ID0_pytorch/rnnt/result_0.txt"
    run = build_run(tmp_path / "run", 0.9, "higher", 8, [Node([("trainer.log", path)])])
    stated_higher = compute_run_kpis(LocalRunSource(run), 0.058, None, "higher").configs[0]  # type: ignore[arg-type]
    right = compute_run_kpis(LocalRunSource(run), 0.058, None, "lower").configs[0]  # type: ignore[arg-type]
    assert right.time_to_accuracy_s == pytest.approx(2291.252, rel=0.001)
    assert stated_higher.time_to_accuracy_s == right.time_to_accuracy_s


# -- golden `distkpi kpis --json` of whole run folders ------------------------------------

RUNS: dict[str, dict[str, Any]] = {
    # every line of the file: MLLOG, DLLogger text, the lower-is-better WER
    "rnnt-gigabyte-v2.0": {
        "target": 0.058,
        "direction": "lower",
        "gpus": 8,
        "nodes": [
            [("result_0.txt", "mlperf_mllog/v2.0/GIGABYTE/G492-ID0_pytorch/rnnt/result_0.txt")]
        ],
    },
    # eval_accuracy objects of BBOX and SEGM
    "maskrcnn-gigabyte-v2.0": {
        "target": {"BBOX": 0.377, "SEGM": 0.339},
        "direction": "higher",
        "gpus": 8,
        "nodes": [
            [("result_0.txt", "mlperf_mllog/v2.0/GIGABYTE/G492-ID0_pytorch/maskrcnn/result_0.txt")]
        ],
    },
    # run_stop aborted: ok, did not reach the target, throughput kept
    "resnet-inspur-aborted-v2.0": {
        "target": 0.759,
        "direction": "higher",
        "gpus": 8,
        "nodes": [
            [("result_1.txt", "mlperf_mllog/v2.0/Inspur/nf5688m6_mxnet/resnet/result_1.txt")]
        ],
    },
    # no throughput line: train_samples over the epochs
    "resnet-tinybox-v4.0": {
        "target": 0.759,
        "direction": "higher",
        "gpus": 6,
        "nodes": [[("result_0.txt", "mlperf_mllog/v4.0/tinycorp/tinybox_red/resnet/result_0.txt")]],
    },
    # PaddleSeg on 4 cards: only rank 0 logs its per-card ips
    "encnet-paddleseg-4cards": {
        "target": 0.5,
        "direction": "higher",
        "gpus": 4,
        "nodes": [
            [(f"workerlog.{i}", f"paddle_ips/ENCNet-paddle/workerlog.{i}") for i in range(4)]
        ],
    },
    # the oldest MLPerf format, and no throughput at all
    "resnet-nvidia-v0.5": {
        "target": 0.749,
        "direction": "higher",
        "gpus": 8,
        "nodes": [[("result_0.txt", "mlperf_v05/nvidia/dgx1_ngc18.11_mxnet/resnet/result_0.txt")]],
    },
}


def _golden_run(name: str, tmp_path: Path) -> Path:
    spec = RUNS[name]
    nodes = [Node(files) for files in spec["nodes"]]
    return build_run(tmp_path / name, spec["target"], spec["direction"], spec["gpus"], nodes, name)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_golden_kpis_json_of_real_run_folders(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _golden_run(name, tmp_path)
    assert main(["kpis", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("DISTKPI_REGOLD"):
        golden.write_text(json.dumps(out, indent=2) + "\n")
    assert out == json.loads(golden.read_text())
    shutil.rmtree(folder)
