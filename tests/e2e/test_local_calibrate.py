"""`distkpi local calibrate` end to end: two A/A jobs of a tiny paired suite started through
the stand-in's repository dispatch and the real webhook, run with real training, reported
as `distkpi calibrate --json` reports them, their history kept in the state folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distkpi.adapters.dynamo import HistoryRepository
from distkpi.domain.history_rows import rows_from_records
from distkpi.domain.judging.history import series
from distkpi_cli.local.attach import local_table
from distkpi_cli.local.state import StateFolder
from distkpi_cli.main import main
from tests.e2e.test_local import CONFIGS, TINY, repository

# a minute or more of real training: `make slow`, which CI runs beside `make test`
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# one pair, no warm-up: each A/A job is two runs of seconds
PAIRED = "  default_tolerance: 0.9\n  paired: {max_pairs: 1, warmup: false}\n"


def test_two_a_a_jobs_are_reported_and_seed_the_paired_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "tiny.yaml"
    suite.write_text(
        TINY.format(configs=CONFIGS["1x1"]).replace("  default_tolerance: 0.9\n", PAIRED)
    )
    state = tmp_path / "state"
    argv = ["local", "calibrate", "--suite", str(suite), "--repo", str(repository(tmp_path))]
    argv += ["--jobs", "2", "--state", str(state), "--out", str(tmp_path / "out"), "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"configs", "drop", "false_failure_rate", "designs", "favoured"}
    throughput = report["configs"]["1x1"]["throughput"]
    assert set(throughput) == {"total_cv", "allocation_share", "within_cv", "jobs"}
    assert throughput["jobs"] == 2 and throughput["total_cv"] > 0
    assert [d["design"] for d in report["designs"]] == ["one run", "confirm", "paired"]
    assert report["favoured"] in ("one run", "confirm", "paired")
    # the state folder keeps both runs, and the paired history holds each one's first pair
    with local_table(StateFolder(state)) as table:
        records = list(HistoryRepository(table).history("local/demo", "develop", "tiny"))
    assert len(records) == 2 and all(r.calibration for r in records)
    assert len({r.run_id for r in records}) == 2 and len({r.sha for r in records}) == 1
    hardware = records[0].kpis.hardware
    paired = series(rows_from_records(records), "1x1", "throughput", hardware=hardware, paired=True)
    assert sorted(paired) == sorted(r.paired["throughput"] for r in records)
