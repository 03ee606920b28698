"""The history site's view: what its pages show, computed from history rows alone (no
matplotlib, no HTML), as the renderer then draws it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

from distkpi.domain.records import ResetRecord, SeriesRecord
from distkpi_cli import site_view
from distkpi_cli.site_view import Line, runs_of
from tests.unit.test_report_page import RUN_ID, history_records

SERIES = SeriesRecord("local/demo", "develop", "local", RUN_ID, "failure", "regressed", "t")


def report(run_id: str) -> str:
    return f"../reports/{run_id}/index.html"


def test_a_page_shows_each_runs_value_its_allowed_range_and_its_report() -> None:
    (record,) = history_records(RUN_ID)
    page = site_view.page(SERIES, 1, list(runs_of([record])), False, [], report_url=report)
    assert page.file == "local_demo-develop-local.html"
    assert page.nav == (("index.html", "all histories"),)
    throughput = next(c for c in page.charts if c.kpi == "throughput")
    assert throughput.file == "local_demo-develop-local-1-throughput.svg"
    assert throughput.label == site_view.LABELS["throughput"]
    ((point,),) = [p.points for p in throughput.panels]
    judged = record.judged["throughput"]
    assert point.value == record.kpis.value("throughput")
    assert (point.low, point.high) == (judged["low"], judged["high"])
    assert point.regressed == (judged["verdict"] == "regressed")
    assert point.report == report(RUN_ID)
    (row,) = page.table or ()
    assert (row.run_id, row.sha, row.configs) == (RUN_ID, "c" * 10, 1)
    assert row.judged == ("regressed" if point.regressed else "ok")
    assert json.loads(json.dumps(page.to_json()))["charts"][0]["kpi"] == page.charts[0].kpi


def test_a_reset_is_drawn_before_the_first_run_after_it_and_pages_link_each_other() -> None:
    (record,) = history_records(RUN_ID)
    newest_first = [
        replace(record, run_id=f"run-{i}", finished_at=f"2026-12-0{i}T00:00:00") for i in (3, 2, 1)
    ]
    reset = ResetRecord(
        "local/demo", "develop", "local", "*", "new cluster", "ana", "2026-12-01T12"
    )
    runs = list(runs_of(newest_first))
    page = site_view.page(SERIES, 2, runs, True, [reset], report_url=report)
    assert [text for _, text in page.nav] == ["all histories", "newer runs", "older runs"]
    assert page.nav[1][0] == "local_demo-develop-local.html"
    assert page.table is None  # the table is the first page's
    (panel,) = page.charts[0].panels
    assert panel.resets == (Line(1, "reset: new cluster (ana)"),)
    assert panel.change_point is None  # fewer than eight points
    assert [p.report for p in panel.points] == [report(f"run-{i}") for i in (1, 2, 3)]
    assert (page.first, page.last) == ("2026-12-01T00:00:00", "2026-12-03T00:00:00")


def test_the_index_lists_every_history_and_the_links_that_find_no_file() -> None:
    index = site_view.index([SERIES], ["../reports/x/index.html"])
    (row,) = index.rows
    assert row.page == "local_demo-develop-local.html"
    assert (row.state, row.description) == ("failure", "regressed")
    assert index.to_json()["unreached"] == ("../reports/x/index.html",)


def test_the_view_is_computed_without_matplotlib() -> None:
    code = (
        "import sys; from distkpi_cli import site_view; "
        "from tests.unit.test_report_page import RUN_ID, history_records; "
        "from tests.unit.test_site_view import SERIES, report; "
        "site_view.page(SERIES, 1, list(site_view.runs_of(history_records(RUN_ID))), False, "
        "[], report_url=report); print('matplotlib' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
