"""The history application in a real browser, on a site folder of known values
(`site_fixture`): what a reader sees and does on each page."""

from __future__ import annotations

import shutil
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from distkpi.reporting.page import build_report
from tests.browser.conftest import LOCAL_RUNS, RUN_ID
from tests.browser.site_fixture import KPIS, RESNET, sha
from tests.unit.test_report_page import record
from tests.unit.test_short_history import earlier_runs, local_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WAIT_S = 20


def opened(browser: Any, url: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, WAIT_S).until(
        lambda b: b.execute_script("return document.documentElement.dataset.ready") == "true"
    )
    return browser


def page(site: Path, name: str, **query: str) -> str:
    return (site / name).as_uri() + (f"?{urlencode(query)}" if query else "")


def text(browser: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(browser.find_element(By.CSS_SELECTOR, css).text)


def hover_run(browser: Any, run_id: str, chart: int = 0) -> str:
    """Moves the mouse onto a run's point of the first config on a chart; the tip's text."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    x, y, width, height = browser.execute_script(
        """const v = window.distkpiView, u = v.charts[arguments[1]];
        const i = v.index.get(arguments[0]);
        return [u.valToPos(u.data[0][i], 'x'), u.valToPos(u.data[1][i], 'y'),
                u.over.clientWidth, u.over.clientHeight];""",
        run_id,
        chart,
    )
    over = browser.find_elements(By.CSS_SELECTOR, ".u-over")[chart]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", over)
    ActionChains(browser).move_to_element_with_offset(
        over, int(x - width / 2), int(y - height / 2)
    ).perform()
    return text(browser, f".chart:nth-of-type({chart + 1}) .tip")


def shown_range(browser: Any) -> dict[str, str]:
    return dict(
        browser.execute_script(
            "const r = document.getElementById('range');return {...r.dataset, text: r.textContent};"
        )
    )


def test_the_index_lists_every_history_with_its_latest_verdict(
    browser: Any, site: Path, screenshots: Path
) -> None:
    from selenium.webdriver.common.by import By

    opened(browser, page(site, "index.html"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#histories tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows] == ["resnet50", "local"]
    assert rows[0].find_elements(By.TAG_NAME, "td")[3].text == "240"
    assert rows[0].find_elements(By.CSS_SELECTOR, "svg.spark polyline")
    browser.save_screenshot(str(screenshots / "index.png"))


def test_hovering_a_point_shows_its_commit_author_date_range_and_verdict(
    browser: Any, site: Path, screenshots: Path
) -> None:
    opened(browser, page(site, "model.html", series=RESNET.series))
    run = RESNET.run_id(201)
    tip = hover_run(browser, run)
    assert sha(RESNET, 201)[:10] in tip
    assert "Grace Hopper" in tip  # AUTHORS[201 % 4]
    assert "2026-03-17 09:00" in tip  # 201 runs of 9 hours after 1 January
    # 120 * 0.9 * (1 + (1 - 5) / 500), allowed 6 % either side of 120 * 0.9
    assert "1x1 107.14 101.52 … 114.48 ok" in tip
    browser.save_screenshot(str(screenshots / "model-hover.png"))


def test_dragging_across_a_chart_zooms_every_chart_into_those_runs(
    browser: Any, site: Path, screenshots: Path
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    opened(browser, page(site, "model.html", series=RESNET.series))
    whole = shown_range(browser)
    assert whole["runs"] == "240"
    over = browser.find_elements(By.CSS_SELECTOR, ".u-over")[0]
    width = over.size["width"]
    # from a fifth of the way to two fifths (offsets are from the element's centre)
    ActionChains(browser).move_to_element_with_offset(
        over, -int(width * 0.3), 0
    ).click_and_hold().move_to_element_with_offset(over, -int(width * 0.1), 0).release().perform()
    zoomed = shown_range(browser)
    assert 20 < int(zoomed["runs"]) < 100, zoomed
    assert zoomed["first"] > whole["first"] and zoomed["last"] < whole["last"]
    # the charts below the screen are drawn as they come near it, over the same runs
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    WebDriverWait(browser, WAIT_S).until(
        lambda b: b.execute_script("return window.distkpiView.charts.length") == len(KPIS)
    )
    scales = browser.execute_script(
        "return window.distkpiView.charts.map(u => [u.scales.x.min, u.scales.x.max])"
    )
    assert all(s == scales[0] for s in scales), scales
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(screenshots / "model-zoomed.png"))
    browser.find_element(By.ID, "pan-left").click()
    assert shown_range(browser)["first"] < zoomed["first"]


def test_unticking_a_config_hides_it_from_every_chart_and_the_tip(
    browser: Any, site: Path, screenshots: Path
) -> None:
    from selenium.webdriver.common.by import By

    opened(browser, page(site, "model.html", series=RESNET.series))
    assert "4x8-8ps" in hover_run(browser, RESNET.run_id(150))
    browser.find_element(By.CSS_SELECTOR, "input[name=config][value='4x8-8ps']").click()
    shown = browser.execute_script(
        "return window.distkpiView.charts.map(u => u.series.filter(s => s.show).map(s => s.label))"
    )
    assert all("4x8-8ps" not in labels and "1x8" in labels for labels in shown)
    assert "4x8-8ps" not in hover_run(browser, RESNET.run_id(150))
    assert "hide=4x8-8ps" in browser.current_url
    browser.save_screenshot(str(screenshots / "model-config-hidden.png"))


def cells(browser: Any, config: str, kpi: str) -> list[str]:
    from selenium.webdriver.common.by import By

    row = browser.find_element(
        By.CSS_SELECTOR, f"tr.delta[data-config='{config}'][data-kpi='{kpi}']"
    )
    return [td.text for td in row.find_elements(By.TAG_NAME, "td")]


def test_the_compare_page_shows_each_kpis_delta_and_its_noise(
    browser: Any, site: Path, screenshots: Path
) -> None:
    opened(browser, page(site, "compare.html", a=RESNET.run_id(10), b=RESNET.run_id(13)))
    # 1x8: 720 * (1 - 5/500) = 712.8 and 720 * (1 - 2/500) = 717.12
    assert cells(browser, "1x8", "throughput") == [
        "1x8",
        "throughput",
        "712.8",
        "717.12",
        "+4.32",
        "+0.6%",
        "±2.0%",
        "ok",
        "ok",
    ]
    browser.save_screenshot(str(screenshots / "compare.png"))
    opened(browser, page(site, "compare.html", a=RESNET.run_id(95), b=RESNET.run_id(96)))
    # run 96's largest config at 75 %: 2400 * (1 + 1/500) * 0.75 = 1803.6, against 2400
    assert cells(browser, "4x8-8ps", "throughput") == [
        "4x8-8ps",
        "throughput",
        "2,400",
        "1,803.6",
        "-596.4",
        "-24.8%",
        "±2.0%",
        "ok",
        "regressed",
    ]


def test_two_points_picked_on_the_charts_open_their_comparison(browser: Any, site: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    opened(browser, page(site, "model.html", series=RESNET.series))
    browser.find_element(By.ID, "pick").click()
    for i in (10, 13):
        hover_run(browser, RESNET.run_id(i))
        ActionChains(browser).click().perform()  # where the mouse is: on the point
    browser.find_element(By.ID, "compare-link").click()
    opened(browser, browser.current_url)
    assert cells(browser, "1x8", "throughput")[4] == "+4.32"


def test_a_run_reports_link_opens_its_point_and_its_baseline(
    browser: Any, site: Path, screenshots: Path
) -> None:
    from selenium.webdriver.common.by import By

    history = earlier_runs([(1.0, 1.0)] * 3)  # run-0, run-1, run-2 of local/demo develop
    report = site / "reports" / RUN_ID / "index.html"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_bytes(build_report(record(local_run(), history), history)["index.html"])
    browser.get(report.as_uri())
    browser.find_element(By.CSS_SELECTOR, "a.app-point").click()
    opened(browser, browser.current_url)
    assert f"Run {RUN_ID} on commit {sha(LOCAL_RUNS, 11)[:10]}" in text(browser, "#focus")
    assert browser.execute_script("return window.distkpiView.focus") == RUN_ID
    browser.save_screenshot(str(screenshots / "model-from-report.png"))
    browser.get(report.as_uri())
    browser.find_element(By.CSS_SELECTOR, "a.app-compare").click()
    opened(browser, browser.current_url)
    assert "run-2" in text(browser, "#runs") and RUN_ID in text(browser, "#runs")


def test_the_regressions_page_lists_them_by_state(
    browser: Any, site: Path, screenshots: Path
) -> None:
    opened(browser, page(site, "regressions.html"))
    assert text(browser, "#open h2") == "Open (1)"
    fixed = text(browser, "#fixed")
    assert sha(RESNET, 96)[:10] in fixed and "NCCL ring to tree" in fixed
    browser.save_screenshot(str(screenshots / "regressions.png"))


def test_over_http_the_pages_read_the_json_files_themselves(browser: Any, site: Path) -> None:
    handler = partial(SimpleHTTPRequestHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        opened(browser, f"{base}/model.html?{urlencode({'series': RESNET.series})}")
        assert shown_range(browser)["runs"] == "240"
        requested = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert any(name.endswith(".json") for name in requested)
        assert not any("/api/" in name and name.endswith(".js") for name in requested)
    finally:
        server.shutdown()


def test_choosing_a_hardware_keeps_only_its_runs_and_time_puts_them_on_a_time_axis(
    browser: Any, site: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    opened(browser, page(site, "model.html", series=RESNET.series))
    Select(browser.find_element(By.ID, "hardware")).select_by_value("g5.48xlarge")
    assert shown_range(browser)["runs"] == "18"  # every 13th run: 12, 25, ..., 233
    assert shown_range(browser)["first"] == RESNET.run_id(12)
    Select(browser.find_element(By.ID, "mode")).select_by_value("time")
    assert "mode=time" in browser.current_url and "hardware=g5.48xlarge" in browser.current_url
    axis = browser.execute_script("return window.distkpiView.charts[0].scales.x.time")
    assert axis is True and shown_range(browser)["runs"] == "18"


def test_the_marks_are_listed_with_their_text(browser: Any, site: Path) -> None:
    from selenium.webdriver.common.by import By

    opened(browser, page(site, "model.html", series=RESNET.series))
    rows = browser.find_elements(By.CSS_SELECTOR, "#marks tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == [
        "accepted",
        "reset",
        "change point",
        "culprit",
    ]
    assert "throughput fell 10 % here" in rows[2].text


def test_a_site_without_regressions_says_so(browser: Any, tmp_path: Path, site: Path) -> None:
    bare = tmp_path / "site"
    shutil.copytree(site, bare)
    (bare / "api" / "regressions.json").unlink()
    (bare / "api" / "regressions.js").unlink()
    opened(browser, page(bare, "regressions.html"))
    assert text(browser, "#status") == (
        "No regressions are stored on this site (api/regressions.json is not there)."
    )


def test_a_run_the_site_does_not_hold_is_said_and_the_newest_runs_shown(
    browser: Any, site: Path
) -> None:
    opened(browser, page(site, "model.html", series=RESNET.series, run="no-such-run"))
    assert text(browser, "#status") == (
        "Run no-such-run: api/runs/no-such-run.json is not there; showing the newest months."
    )
    assert shown_range(browser)["runs"] == "240"
