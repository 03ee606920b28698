"""Unbounded work: a log's size is capped where it is written (the node) and where it is
read (the collector), so a config always settles inside a function's time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distkpi.domain.kpis.engine import ConfigStatus
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.main import main
from distkpi_cli.node.logcap import cap_file
from tests.conftest import RunBuilder, mllog

CAP = 256 * 1024


def training_log(lines: int) -> str:
    """A real-shaped log: MLLOG throughput reports, an evaluation, run_stop."""
    out = [mllog("run_start", None, time_ms=1000)]
    out += [mllog("tracked_stats", {"throughput": 100.0}, time_ms=2000 + i) for i in range(lines)]
    out += [mllog("eval_accuracy", 0.9, time_ms=9000, epoch_num=0)]
    out += [mllog("run_stop", None, time_ms=9500, status="success")]
    return "\n".join(out) + "\n"


@pytest.fixture
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("distkpi.domain.kpis.runfolder.MAX_LOG_BYTES", CAP)
    monkeypatch.setattr("distkpi.domain.kpis.runfolder.MAX_CONFIG_LOG_BYTES", 3 * CAP)


def test_a_file_within_the_cap_is_left_as_it_is(tmp_path: Path) -> None:
    log = tmp_path / "trainer-0.log"
    log.write_text(training_log(10))
    before = log.read_bytes()
    assert cap_file(log, len(before)) is None and log.read_bytes() == before


def test_a_file_over_the_cap_is_cut_after_its_last_whole_line(tmp_path: Path) -> None:
    log = tmp_path / "trainer-0.log"
    log.write_text(training_log(10_000))
    size = log.stat().st_size
    cut = cap_file(log, CAP)
    kept = log.read_bytes()
    assert cut == size - len(kept) and len(kept) <= CAP and kept.endswith(b"\n")
    assert len(kept) > CAP - 200  # only the line the cap fell in is dropped


def test_a_file_with_no_line_break_near_the_cap_is_cut_at_it(tmp_path: Path) -> None:
    blob = tmp_path / "trainer-0.log"
    blob.write_bytes(b"x" * (CAP * 2))
    assert cap_file(blob, CAP) == CAP and blob.stat().st_size == CAP


def test_a_log_over_the_cap_is_a_problem_not_a_parse(
    run_builder: RunBuilder, small_caps: None
) -> None:
    run_builder.config("1x1").trainer("1x1", 0, training_log(10_000))
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.status is ConfigStatus.FAILED and kpis.throughput is None
    assert "trainer-0.log: over 0.25 MiB, not parsed (a node cuts its logs there)" in kpis.problems


def test_a_configs_logs_past_their_total_are_not_parsed(
    run_builder: RunBuilder, small_caps: None
) -> None:
    log = training_log(2_800)  # about 240 KiB: under the cap, but four are over the total
    run_builder.config("1x4", trainers=4)
    for node in range(4):
        run_builder.trainer("1x4", node, log)
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x4")
    assert kpis.status is ConfigStatus.FAILED
    over = "trainer-3.log: not parsed: the config's files are over 0.75 MiB in all"
    assert over in kpis.problems


def test_a_log_its_node_cut_is_parsed_and_says_so(run_builder: RunBuilder) -> None:
    run_builder.config("1x1")
    log = training_log(10)
    run_builder.node("1x1", 0, [("trainer-0.log", "trainer", 0, "log", log)])
    manifest = run_builder.root / "1x1" / "node-0.json"
    manifest.write_text(
        manifest.read_text().replace('"kind": "log"', '"kind": "log", "truncated_bytes": 5000')
    )
    kpis = compute_run_kpis(LocalRunSource(run_builder.root)).config("1x1")
    assert kpis.throughput == pytest.approx(100.0)
    assert "trainer-0.log: cut by node 0 at 64 MiB (5000 bytes off its end not uploaded)" in (
        kpis.problems
    )


def test_distkpi_kpis_on_a_persons_own_folder_parses_a_log_of_any_size(
    run_builder: RunBuilder, small_caps: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The caps bound the collector's work on what a pull request's code wrote; a person
    running `distkpi kpis` on a folder of their own wants every log read."""
    run_builder.config("1x1").trainer("1x1", 0, training_log(10_000))
    assert main(["kpis", str(run_builder.root), "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["configs"]["1x1"]
    assert config["status"] == "ok" and config["throughput"] == 100.0
