"""A run's report page: a failed config's cause and logs, no empty chart, what the run did to
the history in words; and the site's band of one run, and its report links that find no file."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from distkpi.domain.diagnosis.breakdown import reduce_trace
from distkpi.domain.diagnosis.compare import diagnose
from distkpi.domain.diagnosis.trace import read_trace
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.judging.evaluation import evaluate
from distkpi.domain.kpis.engine import ConfigStatus, RunKpis
from distkpi.domain.planning.jobs import run_spec_for
from distkpi.domain.planning.suites import load_suite
from distkpi.domain.records import HistoryRecord, RunRecord, SeriesRecord
from distkpi.reporting.page import build_report
from distkpi.services.publish import failed_logs
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.site_pages import FolderSite, build_site, kpi_chart, runs_of
from tests.unit.test_short_history import earlier_runs, local_run

ROOT = Path(__file__).resolve().parents[2]
SUITE = load_suite(ROOT / "infra" / "suites" / "local.yaml")
TRIGGER = Trigger("local/demo", "c" * 40, "refs/heads/develop", "develop", "push", "develop")
RUN_ID = "local-cccccccccc-5b6c8e21"
# what the KPI engine says of a node whose trainer died (`distkpi local --fail 1x2:0:0`)
CRASH = (
    "trainer 0 (1x2/logs/trainer-0.log) crashed: its log shows RuntimeError: injected "
    "failure after epoch 0 (DISTKPI_FAIL_AT_EPOCH)"
)


def record(run: RunKpis, history: list) -> RunRecord:  # type: ignore[type-arg]
    spec = run_spec_for(RUN_ID, TRIGGER, SUITE)
    run = replace(run, run_id=RUN_ID)
    return RunRecord(
        run_id=RUN_ID,
        trigger=TRIGGER,
        model="local",
        spec=spec,
        delivery="d",
        verdict_settings=SUITE.verdict,
        created_at="2026-12-01T23:50:00.000+00:00",
        configs_total=len(run.configs),
        evaluation=evaluate(run, history, SUITE.verdict, SUITE.accuracy_tolerance),
        finished_at="2026-12-01T23:55:00+00:00",
    )


def failed(run: RunKpis, *names: str) -> RunKpis:
    configs = tuple(
        replace(
            c,
            status=ConfigStatus.FAILED,
            throughput=None,
            speedup=None,
            efficiency=None,
            test_accuracy=None,
            time_to_accuracy_s=None,
            accuracy_delta=None,
            problems=(CRASH.replace("1x2", c.name),),
        )
        if c.name in names
        else c
        for c in run.configs
    )
    return replace(run, configs=configs)


def page(files: dict[str, bytes]) -> str:
    return files["index.html"].decode()


def test_a_run_whose_configs_all_failed_shows_why_links_its_logs_and_adds_nothing() -> None:
    run = failed(local_run(), "1x1", "1x2")
    logs = {"1x1": ["1x1/logs/trainer-0.log"], "1x2": ["1x2/logs/trainer-0.log"]}
    files = build_report(record(run, []), [], logs)
    html = page(files)
    assert "<h2>Failed configs</h2>" in html
    assert (
        "<li><b>1x2</b> failed: trainer 0 (1x2/logs/trainer-0.log) crashed: its log shows "
        "RuntimeError: injected failure after epoch 0 (DISTKPI_FAIL_AT_EPOCH)<br>logs: "
        f'<a href="../../runs/{RUN_ID}/1x2/logs/trainer-0.log">'
        f"runs/{RUN_ID}/1x2/logs/trainer-0.log</a></li>"
    ) in html
    assert (
        "<p>No config finished: this run is recorded in develop&#x27;s history but adds no "
        "baseline value to it; the next run is judged as if this one had not run.</p>"
    ) in html
    assert "starts the history" not in html
    # nothing to draw: no chart, and the page says so instead of showing empty axes
    assert set(files) == {"index.html"}
    assert "No config reported a speedup: nothing to draw." in html
    assert "No throughput, in this run or its history: nothing to draw." in html


def test_a_failed_config_beside_ok_ones_adds_none_and_its_panel_is_left_out() -> None:
    run = failed(local_run(), "1x2")
    html = page(build_report(record(run, []), [], {"1x2": []}))
    assert "<li><b>1x2</b> failed: " in html and "<br>logs: none uploaded</li>" in html
    assert (
        "<p>No baseline yet: the KPIs of 1x1 join develop&#x27;s history as baseline values; "
        "1x2 failed and adds none.</p>"
    ) in html


def test_the_first_good_run_starts_the_history_and_a_later_one_joins_it() -> None:
    first = page(build_report(record(local_run(), []), []))
    assert "<p>No baseline yet: the KPIs of 1x1, 1x2 join develop&#x27;s history" in first
    assert "Failed configs" not in first
    history = earlier_runs([(1.0, 1.0)])
    later = page(build_report(record(local_run(), history), history))
    assert "No baseline yet" not in later
    assert "<p>The KPIs of 1x1, 1x2 join develop&#x27;s history as baseline values.</p>" in later


def test_the_publisher_links_a_failed_configs_logs_as_they_are_in_the_run_folder(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "1x2" / "logs"
    logs.mkdir(parents=True)
    for name in ("trainer-0.log", "trainer-0.gpu.csv", "pserver-0.log"):
        (logs / name).write_text("x\n")
    run = record(failed(local_run(), "1x2"), [])
    assert failed_logs(LocalRunSource(tmp_path), run) == {
        "1x2": ["1x2/logs/pserver-0.log", "1x2/logs/trainer-0.log"]
    }


def history_records(run_id: str) -> list[HistoryRecord]:
    rec = record(local_run(scale_1x2=0.76), earlier_runs([(1.0, 1.0)]))
    assert rec.evaluation is not None
    judged = {
        j.kpi: {"low": j.low, "high": j.high, "verdict": j.verdict.value}
        for j in rec.evaluation.judgements
        if j.config == "1x2"
    }
    (config,) = [c for c in rec.evaluation.kpis.configs if c.name == "1x2"]
    return [
        HistoryRecord(
            "local/demo", "develop", "local", "1x2", "c" * 40, run_id,
            "2026-12-01T23:50:00", "2026-12-01T23:55:00", config, judged,
        )
    ]  # fmt: skip


def test_the_band_of_a_single_run_is_a_run_wide() -> None:
    runs = list(runs_of(history_records(RUN_ID)))
    svg = kpi_chart("throughput", runs, ["1x2"], [], lambda r: f"{r}.html").decode()
    # the allowed range: a filled rectangle of the band's colour, one run (1.0) wide
    number = r"([\d.]+) ([\d.]+)\s+"
    shape = rf'<path d="M {number}L {number}L {number}L {number}z\s*"'
    band = re.search(shape + r'[^>]*style="fill: #2ca02c; opacity: 0.12"', svg)
    assert band is not None
    assert float(band[3]) - float(band[1]) > 100  # points across, of the plot's width


class OneHistory:
    def __init__(self, records: list[HistoryRecord]) -> None:
        self.records = records

    def history(self, repo, branch, model, since=None, limit=None):  # type: ignore[no-untyped-def]
        return iter(self.records)

    def resets(self, repo, branch, model):  # type: ignore[no-untyped-def]
        return []

    def series(self, repo=None):  # type: ignore[no-untyped-def]
        return [SeriesRecord("local/demo", "develop", "local", RUN_ID, "success", "ok", "t")]


def test_a_site_whose_report_links_find_no_file_says_so(tmp_path: Path) -> None:
    site = tmp_path / "elsewhere"
    built = build_site(OneHistory(history_records(RUN_ID)), FolderSite(site))
    link = f"../reports/{RUN_ID}/index.html"
    assert built.unreached == (link,)
    assert built.unreached_line(site / "index.html") == (
        f"1 of 1 report link(s) on {site / 'index.html'} find no file, e.g. {link}: write the "
        "site where the reports are beside it (out/local/site for out/local/reports), or give "
        "--report-url"
    )
    index = (site / "index.html").read_text()
    assert f"1 run report link(s) find no file from this folder, e.g. {link}" in index
    report = tmp_path / "reports" / RUN_ID / "index.html"
    report.parent.mkdir(parents=True)
    report.write_text("<p>report</p>")
    assert build_site(OneHistory(history_records(RUN_ID)), FolderSite(site)).unreached == ()


def test_a_pull_requests_run_joins_its_own_history_and_a_bisection_step_none() -> None:
    pull = Trigger("local/demo", "c" * 40, "refs/pull/12/head", "fix", "pull_request", "develop")
    pull = replace(pull, pull_request=12)
    rec = replace(record(local_run(), []), trigger=pull)
    assert (
        "<p>No baseline yet: the KPIs of 1x1, 1x2 join pr:12&#x27;s history (a pull "
        "request&#x27;s: no baseline).</p>"
    ) in page(build_report(rec, []))
    step = replace(record(local_run(), []), bisection="local-bbbbbbbbbb-1")
    assert "<p>A bisection step: it joins no history.</p>" in page(build_report(step, []))


def test_a_report_links_its_point_on_the_history_and_the_comparison_with_its_baseline() -> None:
    history = earlier_runs([(1.0, 1.0)] * 3)  # run-0, run-1, run-2 of develop
    html = page(build_report(record(local_run(), history), history))
    assert (
        '<a class="app-point" href="../../model.html?repo=local%2Fdemo&amp;branch=develop&amp;'
        f'model=local&amp;run={RUN_ID}">'
    ) in html
    assert f'<a class="app-compare" href="../../compare.html?a=run-2&amp;b={RUN_ID}">' in html
    first = page(build_report(record(local_run(), []), []))
    assert 'class="app-point"' in first and 'class="app-compare"' not in first


def test_a_diagnosed_config_gets_its_breakdown_top_operations_and_traces() -> None:
    traces = ROOT / "tests" / "data" / "traces" / "trace_diff"
    base, head = (
        reduce_trace(read_trace((traces / name).read_bytes()))
        for name in ("control.json.gz", "test.json.gz")
    )
    listed = {
        side: {"trainer": [{"file": f"runs/r-d/1x2/pair-1/{arm}/files/trainer-0/profile/"
                                    "rank-0.json.gz", "rank": 0, "bytes": 1, "steps": 5}]}
        for side, arm in (("base", "a"), ("head", "b"))
    }  # fmt: skip
    stored = diagnose({"trainer": [base]}, {"trainer": [head]}, traces=listed).to_json()
    stored["top_ops"][0]["name"] = "<script>alert(1)</script>"  # a name the code chose
    stored |= {"gpu_hours": 0.25, "problems": []}
    html = page(build_report(record(local_run(), []), [], {}, {"1x2": stored}))
    section = html.split("<h2>Why it changed: profiled base and head</h2>", 1)[1]
    assert "<h3>1x2</h3>" in section and "(0.25 GPU-hours)" in section
    assert "compute +83% per step (47 -&gt; 86 ms), communication +44%" in section
    assert section.count('<svg width="520"') == 1  # the trainer's bars, base and head
    assert "<title>compute: 47 ms per step</title>" in section
    assert section.count("<tr><td>trainer</td>") == 10
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section and "<script>" not in section
    assert (
        '<a href="../../runs/r-d/1x2/pair-1/b/files/trainer-0/profile/rank-0.json.gz">' in section
    )
    assert "ui.perfetto.dev" in section
