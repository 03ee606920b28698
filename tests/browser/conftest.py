"""A headless Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium) and a
site folder written by `site_fixture`. Screenshots of each page go to
`<pytest's base temporary folder>/browser-screenshots/` (printed at the end of the run)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.browser.site_fixture import LOCAL, RESNET, write_site
from tests.unit.test_report_page import RUN_ID

SCREENSHOTS = Path(__file__).resolve().parents[2] / "out" / "browser-screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
# the local history's runs: run-0 ... run-10 (as tests.unit.test_short_history's earlier
# runs are named), then the run whose report the tests build
LOCAL_RUNS = replace(LOCAL, run_ids=(*(f"run-{i}" for i in range(LOCAL.runs - 1)), RUN_ID))


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_site(tmp_path_factory.mktemp("site"), (RESNET, LOCAL_RUNS))


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if CHROMIUM is None or DRIVER is None:
        pytest.skip(
            "needs Debian's chromium and its driver: apt-get install -y chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SCREENSHOTS.is_dir() and any(SCREENSHOTS.iterdir()):
        terminalreporter.write_line(f"browser screenshots: {SCREENSHOTS}")
