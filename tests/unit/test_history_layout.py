"""A language model's configs differ by their parallel layout more than by their GPUs: the
history says each row's layout, and a history file written before it had the column still
reads."""

from __future__ import annotations

import io
from pathlib import Path

from distkpi.domain.history_rows import rows_from_records
from distkpi.domain.kpis.engine import ConfigKpis
from distkpi.domain.records import HistoryRecord
from distkpi_cli.history_files import read_history_csv, write_history


def record(config: str, layout: dict[str, int]) -> HistoryRecord:
    data = {"name": config, "gpus": 8, "status": "ok", "throughput": 100.0, "layout": layout}
    return HistoryRecord(
        "o/r", "main", "gpt", config, "a" * 40, "r1", "t", "t", ConfigKpis.from_record(data)
    )


def test_each_row_names_its_configs_layout_and_the_csv_keeps_it(tmp_path: Path) -> None:
    rows = rows_from_records([record("tp2-pp4", {"tp": 2, "pp": 4, "dp": 1}), record("dp8", {})])
    layouts = {(r.config, r.layout) for r in rows if r.kpi == "throughput"}
    assert layouts == {("tp2-pp4", "tp=2 pp=4 dp=1"), ("dp8", None)}
    out = io.StringIO()
    write_history(rows, "csv", out)
    (tmp_path / "history.csv").write_text(out.getvalue())
    assert {(r.config, r.layout) for r in read_history_csv(tmp_path / "history.csv")} == {
        ("tp2-pp4", "tp=2 pp=4 dp=1"),
        ("dp8", None),
    }


def test_a_history_file_from_before_the_layout_column_reads_without_one(tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    path.write_text(
        "finished_at,repo,branch,model,config,sha,run_id,kpi,value\n"
        "2026-01-01T00:00:00,o/r,main,gpt,1x8,abc,r1,throughput,10.0\n"
    )
    (row,) = read_history_csv(path)
    assert row.layout is None and row.value == 10.0


def test_a_push_and_a_pull_request_name_who_wrote_them() -> None:
    """The history site's points say who wrote each commit: a push's head commit's author
    (their login), a pull request's opener; neither is part of the trigger's identity."""
    import json

    from distkpi.domain.github.events import PullRequestEvent, PushEvent
    from distkpi.domain.github.webhook import Trigger, decide, parse
    from tests.fakes import ROOT

    def recorded(name: str) -> dict[str, object]:
        return json.loads((ROOT / "tests" / "events" / f"{name}.json").read_text())["payload"]

    push = parse("push", recorded("push"))
    assert isinstance(push, PushEvent)
    pushed = decide(push, ("develop",))
    assert isinstance(pushed, Trigger) and pushed.author == push.author is not None
    pull = parse("pull_request", recorded("pull_request"))
    assert isinstance(pull, PullRequestEvent)
    opened = decide(pull, ("develop",))
    assert isinstance(opened, Trigger)
    assert opened.author == recorded("pull_request")["pull_request"]["user"]["login"]  # type: ignore[index]
    assert opened == Trigger(**{**opened.__dict__, "author": None})
