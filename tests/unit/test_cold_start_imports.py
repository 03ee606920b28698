"""The webhook and job_events paths must not pay for pandas or matplotlib at cold start, and
the webhook not for numpy, the KPI engine or the statistics either (a suite's verdict
settings are apart from them)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("function", "unwanted"),
    [
        (
            "webhook",
            (
                "pandas",
                "matplotlib",
                "numpy",
                "distkpi.domain.kpis.engine",
                "ahocorasick_rs",
                "distkpi.domain.judging.statistics",
                "distkpi.domain.judging.student_t",
            ),
        ),
        ("job_events", ("pandas", "matplotlib")),
    ],
)
def test_handler_imports_no_heavy_analysis_modules(
    function: str, unwanted: tuple[str, ...]
) -> None:
    handler = str(ROOT / "functions" / function / "app.py")
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('app', {handler!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        f"print(sorted(m for m in {unwanted!r} if m in sys.modules))\n"
    )
    env = {"POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "[]"
