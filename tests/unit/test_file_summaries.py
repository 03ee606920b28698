"""Parse where the data is: the summaries a node puts in its signed manifest stand for its
files, field for field, and give the same KPIs as parsing the files; a manifest whose
summaries cannot be used (another engine, none, unreadable, unverified) has its files
parsed, and says so; job_events and the sweeper never parse a log."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.kpis.engine import ConfigKpis, config_kpis, run_kpis
from distkpi.domain.kpis.runfolder import Reading, compute_run_kpis, gather_config, read_run_spec
from distkpi.domain.logs.engineversion import engine_version
from distkpi.domain.logs.filesummary import (
    summarize,
    summary_from_json,
    summary_to_json,
)
from distkpi.domain.logs.gpumemory import GpuMemorySummary
from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings
from distkpi.domain.logs.logsummary import EvalPoint, Level, LogSummary, Per, RunningMean
from distkpi.domain.logs.parsesettings import settings_digest, settings_from_json, settings_to_json
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.domain.signing import sign
from distkpi.exceptions import ContractError
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.node.summaries import describe

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed-run"
KEY = "k" * 64


def every_field_set() -> list[tuple[str, Any]]:
    """A LogSummary and a GpuMemorySummary with every field away from its default."""
    log = LogSummary(
        direction=Direction.LOWER,
        warmup_reports=2,
        declared=("throughput",),
        throughput={
            Level.PASS: RunningMean(Per.NODE, 1, 3, 32.5, [10.5, 11.0, 11.0]),
            Level.ITERATION: RunningMean(Per.JOB, None, 1, 2.25, [2.25]),
        },
        per_gpu_throughput=RunningMean(Per.CARD, None, 2, 15.0, [7.0, 8.0]),
        explicit_total=96.5,
        accuracy_by_pass={0: 0.5, 3: {"BBOX": 0.377, "SEGM": 0.339}},
        last_accuracy=0.71,
        accuracy_frontier=[EvalPoint(0.5, 12.0), EvalPoint(0.71, None)],
        run_start_s=1_700_000_000.125,
        run_stop_s=1_700_000_890.125,
        converge_speed_s=890.0,
        train_samples=1_281_167.0,
        epoch_starts={0: 100.0, 1: 160.0},
        epoch_stops={0: 150.0, 1: 210.0},
        crash="a Python traceback",
        crash_cause="RuntimeError: gloo",
        aborted=True,
        problem_counts={"unreadable :::MLLOG line skipped": 2, "empty file": 1},
        tokens_per_s=RunningMean(Per.JOB, 2, 3, 30.0, [9.0, 10.0, 11.0]),
        step_time_s=RunningMean(Per.NODE, None, 2, 1.5, [0.75, 0.75]),
        tflops_per_gpu=RunningMean(Per.PROCESS, None, 1, 312.4, [312.4]),
        mfu=RunningMean(Per.JOB, None, 1, 0.316, [0.316]),
        loss_by_step={10: 7.8, 20: 6.5},
        last_loss=6.5,
        nonfinite_losses=2,
        first_nonfinite_step=30,
        nan_iterations=3,
        skipped_iterations=4,
        seq_len=4096,
        global_batch=1024,
        framework_memory_mib=34754.56,
        framework_memory_kind="max reserved",
        framework_memory_role="trainer",
        benchmark="stable_diffusion",
        part_directions={"FID": Direction.LOWER, "CLIP": Direction.HIGHER},
        parts_key="1000|",
        observed={"prefetch_depth": RunningMean(Per.PROCESS, 2, 2, 8.0, [4.0, 4.0])},
    )
    gpu = GpuMemorySummary(peak_mib=12104.5, samples=17, problems=["1 line(s) not understood"])
    return [("log", log), ("gpu_memory", gpu)]


@pytest.mark.parametrize(("kind", "summary"), every_field_set())
def test_every_field_survives_the_manifest(kind: Any, summary: Any) -> None:
    for field in dataclasses.fields(summary):
        default = (
            field.default_factory()  # type: ignore[misc]
            if field.default_factory is not dataclasses.MISSING
            else field.default
        )
        assert getattr(summary, field.name) != default, f"set {field.name} in this test"
    through_json = json.loads(json.dumps(summary_to_json(kind, summary)))
    assert summary_from_json(kind, through_json) == summary


def seed_files() -> list[tuple[Path, Any]]:
    kinds = {".log": "log", ".csv": "gpu_memory"}
    return [(path, kinds[path.suffix]) for path in sorted(SEED.glob("*/logs/*"))]


def test_each_seed_file_summarized_and_read_back_is_what_parsing_it_gives() -> None:
    for path, kind in seed_files():
        described = describe(path.open("rb"), kind)
        summary = summary_from_json(kind, json.loads(json.dumps(described["summary"])))
        with path.open("rb") as stream:
            assert summary == summarize(kind, stream), path


@pytest.mark.parametrize(
    "data",
    [
        {"throughput": {"7": {"count": 1}}},  # no such level
        {"accuracy_by_pass": {"x": 0.5}},
        {"problem_counts": ["a list"]},
        {"explicit_total": float("inf")},
        {"accuracy_by_pass": {"1": 1e300}},  # DynamoDB could store no KPI from it
        "not an object",
    ],
)
def test_a_summary_that_is_not_one_is_a_contract_error(data: object) -> None:
    with pytest.raises(ContractError, match="not a summary of a log"):
        summary_from_json("log", data)


def nodes_write_manifests(
    folder: Path, settings: ParseSettings = DEFAULT_SETTINGS, **changes: Any
) -> None:
    """Each node's manifest of the seed run as `distkpi node` writes it: every file's sha256
    and summary from one read, the engine's version, its run and config, signed with the
    config's key."""
    run_id = json.loads((folder / "run.json").read_text())["run_id"]
    for path in sorted(folder.glob("*/node-*.json")):
        manifest = json.loads(path.read_text())
        manifest |= {"run_id": run_id, "config": path.parent.name}
        for entry in manifest["files"]:
            with (path.parent / entry["path"]).open("rb") as stream:
                entry.update(describe(stream, entry["kind"], settings))
        manifest["engine_version"] = engine_version()
        if (digest := settings_digest(settings)) is not None:
            manifest["summary_settings"] = digest
        manifest.update(changes)
        path.write_text(json.dumps(sign(KEY, manifest)))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(SEED, copy)
    nodes_write_manifests(copy)
    return copy


def kpis_of(folder: Path, reading: Reading) -> dict[str, ConfigKpis]:
    """The run's KPIs (speedups included), its configs settled as the collector does."""
    source = LocalRunSource(folder)
    run = read_run_spec(source)
    configs = {
        spec.name: config_kpis(
            gather_config(source, spec, reading), run.target_accuracy, run.accuracy_pass
        )
        for spec in run.configs
    }
    return {kpis.name: kpis for kpis in run_kpis(run, configs).configs}


def test_summaries_and_parsing_the_folder_give_the_same_kpis(folder: Path) -> None:
    parsed = compute_run_kpis(LocalRunSource(folder)).configs  # what `distkpi kpis` does
    summarized = kpis_of(folder, Reading(KEY))
    assert [c.name for c in parsed] == list(summarized)
    for kpis in parsed:
        assert summarized[kpis.name] == kpis
    assert all(k.throughput is not None for k in parsed)


def test_with_the_summaries_no_log_is_read(folder: Path) -> None:
    expected = kpis_of(folder, Reading(KEY))
    for log in folder.glob("*/logs/*"):
        log.unlink()
    assert kpis_of(folder, Reading(KEY)) == expected
    # without them the same folder has nothing to read
    assert any("but missing" in p for p in kpis_of(folder, Reading(None))["1x1"].problems)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"engine_version": engine_version() + 1}, f"engine version {engine_version() + 1}, not"),
        ({"engine_version": None}, "no file summaries in the manifest (an older image?)"),
        # an image from before the version was derived from the engine's sources
        ({"engine_version": 6}, f"engine version 6, not {engine_version()}"),
    ],
)
def test_summaries_of_another_engine_are_parsed_again_and_it_says_so(
    folder: Path, changes: dict[str, Any], why: str
) -> None:
    expected = kpis_of(folder, Reading(None))
    nodes_write_manifests(folder, **changes)
    got = kpis_of(folder, Reading(KEY))
    for name, kpis in got.items():
        (note,) = [p for p in kpis.problems if "parsed from the run folder" in p]
        nodes = ", ".join(str(n) for n in range(len(list((folder / name).glob("node-*.json")))))
        assert note.startswith(f"node(s) {nodes}: ") and why in note
        assert kpis.throughput == expected[name].throughput
        assert dataclasses.replace(kpis, problems=expected[name].problems) == expected[name]


def test_a_suite_that_reads_its_logs_its_own_way_is_parsed_without_a_problem_saying_so(
    folder: Path,
) -> None:
    """The collector parses such a suite's logs by design; a note saying so led every one
    of its statuses, before the cause of a failure."""
    own_way = Reading(KEY, settings=ParseSettings(warmup_reports=0))
    for kpis in kpis_of(folder, own_way).values():
        assert not any("parse settings" in p for p in kpis.problems)
        assert kpis.throughput is not None
    unread = kpis_of(folder, dataclasses.replace(own_way, parse_logs=False))["1x1"]
    assert (
        "node(s) 0: the manifest's summaries were not made with the suite's own parse settings "
        "(direction, warm-up or patterns); their files were not read: only the collector "
        "parses logs"
    ) in unread.problems


def test_summaries_made_with_the_suites_own_settings_stand_for_its_logs(folder: Path) -> None:
    """The node summarised with the run's settings (DISTKPI_PARSE_SETTINGS) and its manifest
    names their digest: the collector reads no log."""
    own = ParseSettings(warmup_reports=0)
    expected = kpis_of(folder, Reading(None, settings=own))
    nodes_write_manifests(folder, own)
    for log in folder.glob("*/logs/*"):
        log.unlink()
    assert kpis_of(folder, Reading(KEY, settings=own)) == expected
    # summaries of other settings than the run's are not used: the logs, gone, are missing
    other = Reading(KEY, settings=ParseSettings(warmup_reports=1))
    assert any("but missing" in p for p in kpis_of(folder, other)["1x1"].problems)


def test_parse_settings_travel_through_the_job_and_keep_their_digest() -> None:
    """run.json's settings as the launcher writes them and the node reads them back."""
    settings = ParseSettings(
        Direction.LOWER,
        3,
        DeclaredMetrics.model_validate(
            {"loss": {"pattern": "step (?P<step>[0-9]+) loss (?P<value>[0-9.]+)"}}
        ),
    )
    carried = settings_from_json(json.dumps(settings_to_json(settings)))
    assert carried == settings and settings_digest(carried) == settings_digest(settings)
    assert settings_to_json(DEFAULT_SETTINGS) is None and settings_digest(DEFAULT_SETTINGS) is None
    assert settings_from_json(None) == settings_from_json("") == DEFAULT_SETTINGS
    with pytest.raises(ContractError, match="parse settings are not a JSON object"):
        settings_from_json("[1]")
    with pytest.raises(ContractError, match="warmup_reports is not a whole number"):
        settings_from_json('{"warmup_reports": "3"}')


def test_an_unreadable_summary_has_its_file_parsed(folder: Path) -> None:
    manifest_path = folder / "1x1" / "node-0.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][0]["summary"] = {"throughput": "fast"}
    manifest_path.write_text(json.dumps(sign(KEY, manifest)))
    kpis = kpis_of(folder, Reading(KEY))["1x1"]
    assert (
        "node(s) 0: the manifest's summary of logs/trainer-0.log is unreadable; their files "
        "were parsed from the run folder"
    ) in kpis.problems
    assert kpis.throughput == kpis_of(folder, Reading(None))["1x1"].throughput


def test_a_summary_in_a_manifest_not_signed_with_the_key_is_never_used(folder: Path) -> None:
    manifest_path = folder / "1x1" / "node-0.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][0]["summary"]["throughput"]["3"]["first"] = 1e6  # a forged speed
    manifest_path.write_text(json.dumps(manifest))  # the signature no longer holds
    evidence = gather_config(
        LocalRunSource(folder), read_run_spec(LocalRunSource(folder)).configs[0], Reading(KEY)
    )
    assert "not signed with this config's key" in evidence.invalid_nodes[0]
    assert not evidence.logs


def test_without_summaries_job_events_and_the_sweeper_read_no_log(folder: Path) -> None:
    nodes_write_manifests(folder, engine_version=None)
    for log in folder.glob("*/logs/*"):
        log.unlink()  # were any read, it would be a problem of its own
    kpis = kpis_of(folder, Reading(KEY, parse_logs=False))["2x8-4ps"]
    assert kpis.throughput is None
    assert (
        "node(s) 0, 1, 2, 3, 4, 5: no file summaries in the manifest (an older image?); their "
        "files were not read: only the collector parses logs"
    ) in kpis.problems
    assert not any("missing" in p for p in kpis.problems)


def test_a_parser_bug_on_the_node_leaves_the_file_without_a_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(stream: object) -> object:
        raise ZeroDivisionError

    monkeypatch.setattr("distkpi.domain.logs.filesummary.parse_log", broken)
    data = (SEED / "1x1" / "logs" / "trainer-0.log").read_bytes()
    described = describe(io.BytesIO(data), "log")
    assert "summary" not in described and len(described["sha256"]) == 64
