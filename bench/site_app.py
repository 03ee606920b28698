"""How soon a model page of the history application answers, with 10,000 runs of the seed's
four configs, in headless Chromium (Debian's, driven by Selenium), beside the static SVG
site's page of the same history (`distkpi site`).

    python bench/site_app.py [--runs 10000] [--repeat 5] [--keep DIR] [--smoke]

The application's site is written by tests/browser/site_fixture.py (the files of the API
and their .js twins, the seed's seven KPIs, one chunk per calendar month; a run every hour,
so 10,000 runs are 14 months), and opened three ways: as it opens (the newest months up to
8,000 points, model.js's FIRST_POINTS), all months (every run: `from` the first month `to`
the last), both from the file system (the twins), and all months over http from 127.0.0.1
(the JSON files, served by Python's http.server). Its time to interactive is the time from
the navigation's start to the page's `ready()`: the series file and the months shown read,
the charts on the screen drawn and answering the mouse (those below it are drawn as they
come near).

The static site's page is its first page (the newest 500 runs, the 7 SVG charts of
`distkpi site --page-runs 500`, drawn by bench/site_build.py's generator); its time is the
navigation's start to the load event, when its charts are in.

Each figure is the median of ``--repeat`` loads after one load to warm the caches.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from site_build import seed  # noqa: E402

from distkpi.domain.records import HistoryRecord, ResetRecord, SeriesRecord  # noqa: E402
from distkpi_cli.site_pages import FolderSite, build_series  # noqa: E402
from tests.browser.site_fixture import RESNET, History, write_site  # noqa: E402

STATIC_PAGE_RUNS = 500


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        del format, args


class NewestPage:
    """bench/site_build.py's history, in memory, read as `distkpi site` reads the table
    (newest first), only as far as its first page."""

    def __init__(self, page_runs: int) -> None:
        self.records: list[HistoryRecord] = []
        self.reset: list[ResetRecord] = []
        self.listed: list[SeriesRecord] = []
        self.page_runs = page_runs

    def put(self, records: list[HistoryRecord]) -> None:
        self.records += records

    def record_series(self, series: SeriesRecord) -> None:
        self.listed.append(series)

    def record_reset(self, reset: ResetRecord) -> None:
        self.reset.append(reset)

    def history(
        self, repo: str, branch: str, model: str, since: str | None = None, limit: int | None = None
    ) -> Iterator[HistoryRecord]:
        del repo, branch, model, since, limit
        configs = len({r.config for r in self.records})
        yield from reversed(self.records[-self.page_runs * configs :])

    def resets(self, repo: str, branch: str, model: str) -> list[ResetRecord]:
        del repo, branch, model
        return self.reset

    def series(self, repo: str | None = None) -> list[SeriesRecord]:
        del repo
        return self.listed


def static_page(folder: Path, runs: int) -> Path:
    history = NewestPage(STATIC_PAGE_RUNS)
    seed(history, runs)  # type: ignore[arg-type]
    build_series(
        history,
        history.listed[0],
        FolderSite(folder),
        lambda r: f"../reports/{r}/index.html",
        STATIC_PAGE_RUNS,
    )
    return next(folder.glob("*.html"))


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        raise SystemExit("needs Debian's chromium and chromium-driver (apt-get install -y ...)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(driver))


READY = "return document.documentElement.dataset.ready === 'true' ? window.distkpiReadyAt : null"
SHOWN = "const r = document.getElementById('range'); return r ? r.dataset.runs : ''"
FIRST_POINTS = 8000  # model.js
LOADED = (
    "const t = performance.getEntriesByType('navigation')[0];"
    "return t && t.loadEventEnd > 0 ? t.loadEventEnd : null"
)


def timed(driver: Any, url: str, script: str, repeat: int) -> tuple[float, str]:
    """The median over ``repeat`` loads (after one to warm up) of what ``script`` returns
    (ms from the navigation's start) once it returns a number, and the runs the page shows."""
    from selenium.webdriver.support.ui import WebDriverWait

    found = []
    for _ in range(repeat + 1):
        driver.get("about:blank")
        driver.get(url)
        found.append(
            WebDriverWait(driver, 120, poll_frequency=0.05).until(
                lambda d: d.execute_script(script)
            )
        )
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    if errors:  # a page that failed has no time to report
        raise SystemExit(f"{url}: {errors[0]['message']}")
    return float(statistics.median(found[1:])), str(driver.execute_script(SHOWN) or "-")


def opening(months: list[Path]) -> list[Path]:
    """The chunk files the model page reads as it opens: the newest months up to
    FIRST_POINTS points, at least one."""
    points = [len(json.loads(m.read_bytes())["points"]) for m in months]
    first = len(months) - 1
    total = points[first]
    while first > 0 and total + points[first - 1] <= FIRST_POINTS:
        first -= 1
        total += points[first]
    return months[first:]


def megabytes(files: list[Path]) -> str:
    return f"{sum(f.stat().st_size for f in files) / 2**20:.1f}"


def measure(runs: int, repeat: int, keep: Path | None) -> None:
    folder = keep or Path(tempfile.mkdtemp(prefix="distkpi-app-"))
    history = History(
        RESNET.repo, RESNET.branch, RESNET.model, RESNET.configs, runs, timedelta(hours=1)
    )
    site = write_site(folder / "app", (history,), run_files=False)
    static = static_page(folder / "static", runs)
    months = sorted((site / "api" / "series").rglob("20*.json"))
    first = opening(months)
    model = (site / "model.html").as_uri()
    every = {"series": history.series, "from": months[0].stem, "to": months[-1].stem}
    handler = partial(Quiet, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    http = f"http://127.0.0.1:{server.server_address[1]}/model.html"
    driver = browser()
    try:
        shown = [
            (
                f"application as it opens (newest {len(first)} of {len(months)} months), file://",
                f"{model}?{urlencode({'series': history.series})}",
                READY,
                megabytes([m.with_suffix(".js") for m in first]),
            ),
            (
                "application, all months, file://",
                f"{model}?{urlencode(every)}",
                READY,
                megabytes([m.with_suffix(".js") for m in months]),
            ),
            (
                "application, all months, http://127.0.0.1",
                f"{http}?{urlencode(every)}",
                READY,
                megabytes(months),
            ),
            (
                f"static site, first page ({STATIC_PAGE_RUNS} runs), file://",
                static.as_uri(),
                LOADED,
                megabytes([static, *static.parent.glob("*.svg")]),
            ),
        ]
        for name, url, script, size in shown:
            ms, runs_shown = timed(driver, url, script, repeat)
            print(f"| {runs} | {name} | {runs_shown} | {size} | {ms:.0f} |", flush=True)
    finally:
        driver.quit()
        server.shutdown()
        if keep is None:
            shutil.rmtree(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the sites written here")
    parser.add_argument("--smoke", action="store_true", help="200 runs, one load: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.repeat = 200, 1
    print(
        f"$ python bench/site_app.py --runs {args.runs} --repeat {args.repeat}"
        f"{' --smoke' if args.smoke else ''}"
    )
    print("| runs | page | runs shown | data read (MiB) | time to interactive (ms, median) |")
    print("| ---: | --- | ---: | ---: | ---: |")
    measure(args.runs, args.repeat, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
