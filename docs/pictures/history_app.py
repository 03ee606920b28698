"""The pictures of docs/how-to/explore-the-history.md: the history application's pages on
the browser tests' site of known values (tests/browser/site_fixture.py), photographed by
Debian's headless chromium driven by Selenium, the model page with a point hovered.

    .venv/bin/python docs/pictures/history_app.py   # needs chromium and chromium-driver
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

from tests.browser.conftest import CHROMIUM, DRIVER, LOCAL_RUNS  # noqa: E402
from tests.browser.site_fixture import RESNET, write_site  # noqa: E402
from tests.browser.test_history_app import hover_run, opened, page  # noqa: E402

PICTURES = ROOT / "docs" / "pictures"


def main() -> int:
    if CHROMIUM is None or DRIVER is None:
        raise SystemExit("needs chromium and chromium-driver (apt-get install -y ...)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    try:
        with tempfile.TemporaryDirectory() as folder:
            site = write_site(Path(folder), (RESNET, LOCAL_RUNS))
            shots = [
                ("app-index.png", page(site, "index.html"), 1240, 330, None),
                (
                    "app-model.png",
                    page(site, "model.html", series=RESNET.series),
                    1240,
                    900,
                    RESNET.run_id(201),
                ),
                (
                    "app-compare.png",
                    page(site, "compare.html", a=RESNET.run_id(95), b=RESNET.run_id(96)),
                    1240,
                    900,
                    None,
                ),
                ("app-regressions.png", page(site, "regressions.html"), 1240, 640, None),
            ]
            for name, url, width, height, hovered in shots:
                driver.set_window_size(width, height)
                opened(driver, url)
                if hovered is not None:
                    hover_run(driver, hovered)
                    driver.execute_script("window.scrollTo(0, 0)")
                driver.save_screenshot(str(PICTURES / name))
                print(f"wrote {(PICTURES / name).relative_to(ROOT)}")
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
