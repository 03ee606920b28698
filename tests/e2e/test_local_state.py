"""`distkpi local` with a state folder: history that lasts across runs (the first as a GitHub
App), the `--local` history commands and site, the folder's lock, a damaged folder, and
`distkpi local up`."""

from __future__ import annotations

import csv
import io
import json
import re
import threading
import time
from pathlib import Path

import pytest

from distkpi_cli.local.attach import running
from distkpi_cli.local.demo import run_local
from distkpi_cli.local.state import StateError, StateFolder
from distkpi_cli.local.up import serve
from distkpi_cli.main import main
from tests.e2e.test_local import assert_one_check_run_with_the_kpi_table, repository, suite

pytestmark = pytest.mark.e2e
ON_LOCAL = ["--repo", "local/demo", "--model", "tiny"]


def history_run_ids(state: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["history", "--local", "--state", str(state), *ON_LOCAL, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    return list(dict.fromkeys(r["run_id"] for r in rows))


def test_history_lasts_across_runs_and_local_up_and_the_site_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One stack's run, as a GitHub App, then a run on the stack `distkpi local up` keeps for
    the same state folder (two runs of real training, not four: each run costs its jobs'
    start-up)."""
    state = StateFolder(tmp_path / "state")
    tiny, source = suite(tmp_path, "1x1"), repository(tmp_path)
    first = run_local(
        tiny,
        tmp_path / "out",
        source=source,
        progress=io.StringIO(),
        state=state,
        github_app=True,
    )
    assert_one_check_run_with_the_kpi_table(first, tmp_path / "out")
    (earlier,) = first.runs
    # `distkpi local up` keeps a stack on the folder for runs and queries, and saves on stop
    stop = threading.Event()
    up = threading.Thread(
        target=serve, args=(tiny, state, 0), kwargs={"progress": io.StringIO(), "stop": stop}
    )
    up.start()
    try:
        for _ in range(100):
            if running(state) is not None:
                break
            time.sleep(0.2)
        assert running(state) is not None
        second = run_local(
            tiny, tmp_path / "out", source=source, progress=io.StringIO(), state=state
        )
        (later,) = second.runs
        assert [s["state"] for s in second.statuses][-1] == later.state
        # read from the stack
        assert history_run_ids(state.path, capsys) == [earlier.run_id, later.run_id]
    finally:
        stop.set()
        up.join(timeout=60)
    assert running(state) is None and not state.up_file.exists()
    # and from the saved folder
    assert history_run_ids(state.path, capsys) == [earlier.run_id, later.run_id]
    # the second run is judged against the first, which it found in the state folder
    throughput = next(j for j in later.judgements if j.kpi == "throughput")
    assert throughput.baseline == pytest.approx(earlier.kpis.config("1x1").throughput)
    assert "tolerance" in throughput.why  # one earlier value: the suite's tolerance judges
    # the site: an index linking the model's page, whose charts hold both runs
    site = tmp_path / "site"
    assert main(["site", "--local", "--state", str(state.path), "--out", str(site)]) == 0
    index = (site / "index.html").read_text()
    page = re.search(r'href="([^"]+\.html)">tiny<', index)
    assert page is not None
    html = (site / page.group(1)).read_text()
    chart = re.search(r'<object data="([^"]+throughput\.svg)"', html)
    assert chart is not None
    svg = (site / chart.group(1)).read_text()
    for run in (earlier, later):
        assert f"../reports/{run.run_id}/index.html" in svg
    # the site's JSON files rebuilt from the saved folder: what the runs published
    rebuilt = tmp_path / "rebuilt"
    on_state = ["--local", "--state", str(state.path)]
    assert main(["site", "--rebuild", *on_state, "--out", str(rebuilt)]) == 0
    (line,) = json.loads((rebuilt / "api" / "index.json").read_text())["histories"]
    assert line["runs"] == 2 and line["latest"]["run_id"] == later.run_id
    for run in (earlier, later):
        ran = json.loads((rebuilt / "api" / "runs" / f"{run.run_id}.json").read_text())
        assert ran["verdict"] == run.state


def test_a_second_stack_on_the_folder_is_refused_and_a_damaged_one_named(
    tmp_path: Path,
) -> None:
    state = StateFolder(tmp_path / "state")
    tiny, source = suite(tmp_path, "1x1"), repository(tmp_path)
    with state.locked(), pytest.raises(StateError, match="is in use"):
        run_local(tiny, tmp_path / "out", source=source, progress=io.StringIO(), state=state)
    state.path.mkdir()
    (state.path / "state.json").write_text('{"format": 0}')
    with pytest.raises(StateError) as err:
        run_local(tiny, tmp_path / "out", source=source, progress=io.StringIO(), state=state)
    assert f"state folder {state.path}" in str(err.value) and "--fresh" in str(err.value)
    assert main(["history", "--local", "--state", str(tmp_path / "none"), *ON_LOCAL]) == 2
