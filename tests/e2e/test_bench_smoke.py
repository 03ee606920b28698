"""Every benchmark still runs: each script under bench/ in its smoke mode (small sizes, one
pass), which must end well and print the command that reproduces it. The figures are not
checked (nothing here is timed); a benchmark that no longer runs fails here, not months
later in someone's hands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# a module the scripts share starts with "_"
SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))

# minutes of real training or benchmarks: `make slow`, which CI runs beside `make test`
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_runs_in_its_smoke_mode(script: str) -> None:
    done = subprocess.run(
        [sys.executable, f"bench/{script}", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    reproduce = [line for line in done.stdout.splitlines() if f"python bench/{script}" in line]
    assert reproduce and "--smoke" in reproduce[0], done.stdout[:2000]
