"""A page photographed by a real headless browser (Debian's chromium), for the README."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(page: Path, picture: Path, width: int, height: int) -> None:
    found = browser()
    if found is None:
        raise SystemExit("needs chromium (apt-get install chromium)")
    subprocess.run(
        [
            found,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--screenshot={picture}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
    )
