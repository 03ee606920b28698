"""Regression tests of the reliability findings: hostile lines, numbers that do not fit, stray
and duplicated manifests, files that cannot be read. Each one crashed or double-counted
before; now each is a problem of its config and nothing raises."""

from __future__ import annotations

import io
import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO

import pytest
from boto3.dynamodb.types import TypeSerializer

from distkpi.adapters.dynamo import to_dynamo
from distkpi.domain.contracts import MAX_FILES_PER_MANIFEST, ConfigSpec, parse_run_spec
from distkpi.domain.kpis.engine import ConfigStatus
from distkpi.domain.kpis.runfolder import compute_run_kpis, gather_config, node_index
from distkpi.domain.logs.gpumemory import parse_gpu_memory
from distkpi.domain.logs.logformats import parse_log
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.exceptions import StorageError
from distkpi_cli.localfs import LocalRunSource
from tests.conftest import RunBuilder, mllog, pass_log


def parse(*lines: str) -> LogSummary:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()))


def storable(record: dict[str, object]) -> None:
    """What the collector writes to DynamoDB: boto3 serialises it or raises."""
    TypeSerializer().serialize(to_dynamo(record))


# -- finding 3: lines the parser crashed on ------------------------------------------------


def test_an_accuracy_of_minus_one_with_a_timestamp_is_no_index_error(
    run_builder: RunBuilder,
) -> None:
    log = "\n".join(
        [
            mllog("run_start", None, time_ms=1000),
            mllog("tracked_stats", {"throughput": 100.0}, time_ms=2000),
            mllog("eval_accuracy", -1, time_ms=3000, epoch_num=0),
            mllog("eval_accuracy", -2.5, time_ms=4000, epoch_num=1),
        ]
    )
    run_builder.config("1x1").trainer("1x1", 0, log + "\n")
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.time_to_accuracy_s is None
    assert any("never reached the target" in p for p in kpis.problems)


def test_an_mllog_integer_beyond_float_range_is_a_problem() -> None:
    huge = "9" * 400
    line = f':::MLLOG {{"key": "tracked_stats", "value": {{"throughput": {huge}}}, "time_ms": 1}}'
    out = parse(line, mllog("tracked_stats", {"throughput": 50.0}))
    assert out.best_throughput() is not None
    assert any("out of range" in p for p in out.problems)


@pytest.mark.parametrize(
    "line",
    [
        f"Pass = {'1' * 5000}, Training performance = 10 imgs/s, Test accuracy = 0.5",
        f"Pass: {'1' * 5000}, Test Accuracy: 0.5",
        f"kpis\ttest_acc_{'1' * 5000}passes\t0.5",
        f"**metrics_data: pass = 1, acc_{'1' * 5000}passes = 0.61",
        ":::MLLOG "
        + json.dumps({"key": "eval_accuracy", "value": 0.5, "metadata": {"epoch_num": 10**50}}),
    ],
)
def test_a_pass_number_too_long_for_int_is_a_problem(line: str) -> None:
    out = parse(line)
    assert out.accuracy_by_pass == {}
    assert any("pass number" in p for p in out.problems)


def test_json_nested_deeper_than_python_recurses_is_an_unreadable_line() -> None:
    out = parse(":::MLLOG " + "[" * 100_000 + "]" * 100_000)
    assert out.problems == ["unreadable :::MLLOG line skipped"]


@pytest.mark.parametrize("value", ["1e300", "1e-300", "1" * 400])
def test_numbers_dynamodb_cannot_store_never_become_kpis(
    run_builder: RunBuilder, value: str
) -> None:
    log = pass_log(10.0, 20.0) + f"Pass = 2, Training performance = {value} imgs/s\n"
    gpu = f"memory.used [MiB]\n{value} MiB\n100 MiB\n"
    run_builder.config("1x1").trainer("1x1", 0, log, gpu_csv=gpu)
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.throughput == pytest.approx(20.0)
    assert kpis.trainer_gpu_memory_mib == 100.0
    storable(kpis.to_record())


def test_gpu_memory_with_a_huge_value_has_no_infinite_peak() -> None:
    out = parse_gpu_memory(io.BytesIO(("9" * 400 + "\n12 MiB\n").encode()))
    assert out.peak_mib == 12.0


# -- finding 2: node indices -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("node-0.json", 0),
        ("node-1.json", 1),
        ("node-10.json", 10),
        ("node-01.json", None),
        ("node-00.json", None),
        ("node-+1.json", None),
        ("node-1 .json", None),
        ("node-١.json", None),  # an Arabic-Indic digit is a digit to Python's \d
        (f"node-{'1' * 50}.json", None),
    ],
)
def test_only_canonical_node_indices_count(name: str, index: int | None) -> None:
    assert node_index(name) == index


def test_a_copy_named_node_01_beside_node_1_counts_trainer_1_once(
    run_builder: RunBuilder,
) -> None:
    run_builder.config("2x1", trainers=2)
    run_builder.trainer("2x1", 0, pass_log(100.0, 100.0)).trainer("2x1", 1, pass_log(50, 50))
    folder = run_builder.root / "2x1"
    (folder / "node-01.json").write_bytes((folder / "node-1.json").read_bytes())
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("2x1")
    assert kpis.throughput == pytest.approx(150.0)
    assert kpis.status is ConfigStatus.OK
    assert any("'node-01.json' ignored" in p for p in kpis.problems)


def test_a_stray_node_07_for_a_node_that_never_reports_raises_nothing(
    run_builder: RunBuilder,
) -> None:
    run_builder.config("1x8", trainers=8).trainer("1x8", 0, pass_log(10.0, 10.0))
    (run_builder.root / "1x8" / "node-07.json").write_text("{}")
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x8")
    assert kpis.status is ConfigStatus.INCOMPLETE
    assert "node(s) 1, 2, 3, 4, 5, 6, 7 never reported" in kpis.problems


# -- finding 3: manifests that name files twice, too many files or unusable paths ----------


def test_a_file_named_twice_is_parsed_once(run_builder: RunBuilder) -> None:
    log = ("trainer-0.log", "trainer", 0, "log", pass_log(10.0, 10.0))
    run_builder.config("1x1").node("1x1", 0, [log, log, log])
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.throughput == pytest.approx(10.0)
    assert sum("named again by node 0" in p for p in kpis.problems) == 2


def test_a_file_named_by_two_nodes_is_counted_once(run_builder: RunBuilder) -> None:
    log = ("trainer-0.log", "trainer", 0, "log", pass_log(10.0, 10.0))
    run_builder.config("2x1", trainers=2).node("2x1", 0, [log]).node("2x1", 1, [log])
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("2x1")
    assert kpis.throughput == pytest.approx(10.0)
    assert any("named again by node 1" in p for p in kpis.problems)


def test_a_manifest_over_the_file_bound_is_invalid(run_builder: RunBuilder) -> None:
    files = [(f"t{i}.log", "trainer", 0, "log", "x\n") for i in range(MAX_FILES_PER_MANIFEST + 1)]
    run_builder.config("1x1").node("1x1", 0, files)
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.status is ConfigStatus.FAILED
    assert any("at most 256 items" in p for p in kpis.problems)


@pytest.mark.parametrize("path", ["logs/a\x00b.log", "x" * 256, "a/" * 600 + "b"])
def test_a_manifest_path_that_no_file_system_can_hold_is_invalid(
    run_builder: RunBuilder, path: str
) -> None:
    run_builder.config("1x1").trainer("1x1", 0, pass_log(10.0, 10.0))
    manifest_path = run_builder.root / "1x1" / "node-0.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"].append({"path": path, "role": "trainer", "rank": 0, "kind": "log"})
    manifest_path.write_text(json.dumps(manifest))
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.status is ConfigStatus.FAILED
    assert any(p.startswith("node 0: 1x1/node-0.json is not a valid") for p in kpis.problems)


def test_a_local_name_with_a_nul_byte_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        LocalRunSource(tmp_path).read_bytes("a\x00b")
    with pytest.raises(StorageError):
        LocalRunSource(tmp_path).open("x" * 300)


# -- finding 1: a file that cannot be read is a problem, never a stuck config --------------


def first_config(run_builder: RunBuilder) -> ConfigSpec:
    return parse_run_spec(run_builder.run).configs[0]


class Forbidden:
    """A run folder whose store answers 403 for some files, as S3 does without permission."""

    def __init__(self, inner: LocalRunSource, forbidden: set[str]) -> None:
        self.inner, self.forbidden = inner, forbidden

    def read_bytes(self, path: str) -> bytes:
        self._check(path)
        return self.inner.read_bytes(path)

    def open(self, path: str) -> AbstractContextManager[BinaryIO]:
        self._check(path)
        return self.inner.open(path)

    def list_names(self, folder: str) -> list[str]:
        return self.inner.list_names(folder)

    def _check(self, path: str) -> None:
        if path in self.forbidden:
            raise StorageError(f"cannot read {path}: AccessDenied (403)")


def test_a_log_answered_with_403_is_a_problem_of_its_config(run_builder: RunBuilder) -> None:
    run_builder.config("2x1", trainers=2)
    run_builder.trainer("2x1", 0, pass_log(10.0, 10.0)).trainer("2x1", 1, pass_log(10.0, 10.0))
    source = Forbidden(LocalRunSource(run_builder.root), {"2x1/trainer-1.log"})
    evidence = gather_config(source, first_config(run_builder))
    assert any("trainer-1.log: cannot be read" in p for p in evidence.problems)


def test_a_manifest_answered_with_403_fails_its_node(run_builder: RunBuilder) -> None:
    run_builder.config("1x1").trainer("1x1", 0, pass_log(10.0, 10.0))
    source = Forbidden(LocalRunSource(run_builder.root), {"1x1/node-0.json"})
    evidence = gather_config(source, first_config(run_builder))
    assert "AccessDenied" in evidence.invalid_nodes[0]


def test_a_parser_bug_is_a_problem_not_an_exception(
    run_builder: RunBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(stream: BinaryIO) -> object:
        raise ZeroDivisionError

    monkeypatch.setattr("distkpi.domain.kpis.runfolder.parse_log", broken)
    run_builder.config("1x1").trainer("1x1", 0, pass_log(10.0, 10.0))
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.status is ConfigStatus.FAILED
    assert "trainer-0.log: cannot be parsed: ZeroDivisionError" in kpis.problems
