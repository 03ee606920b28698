"""What each entry point imports before it does anything, by module list (never by time): the
webhook must not pay for pandas, matplotlib, numpy, the KPI engine or the statistics (a suite's
verdict settings are apart from them); the other handlers for pandas or matplotlib; and the
command line only for what its command uses (`distkpi --help` for argparse, `distkpi kpis`
for the KPI engine, never the statistics, numpy or AWS)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ("pandas", "matplotlib", "pyarrow", "scipy")
STATISTICS = (
    "numpy",
    "statistics",
    "distkpi.domain.judging.statistics",
    "distkpi.domain.judging.student_t",
    "distkpi.domain.judging.changepoints",
)
KPI_ENGINE = ("distkpi.domain.kpis.engine", "ahocorasick_rs")
AWS = ("boto3", "botocore")


def loaded(code: str, unwanted: tuple[str, ...]) -> list[str]:
    """Which of ``unwanted`` a fresh interpreter has imported after ``code``."""
    code += f"\nimport sys\nprint(sorted(m for m in {unwanted!r} if m in sys.modules))\n"
    env = {"POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout.strip().splitlines()[-1:]


@pytest.mark.parametrize(
    ("function", "unwanted"),
    [
        ("webhook", (*ANALYSIS, *STATISTICS, *KPI_ENGINE)),
        ("launcher", (*ANALYSIS, *STATISTICS, *KPI_ENGINE)),
        ("job_events", (*ANALYSIS, *STATISTICS, *KPI_ENGINE)),
        ("collector", (*ANALYSIS, *STATISTICS)),
        ("sweeper", ANALYSIS),  # it judges the runs it settles: the statistics are its own
    ],
)
def test_handler_imports_no_heavy_analysis_modules(
    function: str, unwanted: tuple[str, ...]
) -> None:
    handler = str(ROOT / "functions" / function / "app.py")
    code = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('app', {handler!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
    )
    assert loaded(code, unwanted) == ["[]"]


def _cli(*argv: str) -> str:
    return (
        "import contextlib, io\n"
        "from distkpi_cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({list(argv)!r})\n"
    )


def test_the_help_imports_argparse_and_the_command_modules_only() -> None:
    unwanted = (
        *ANALYSIS,
        *STATISTICS,
        *KPI_ENGINE,
        *AWS,
        "pydantic",
        "re2",
        "yaml",
        "moto",
        "torch",
    )
    assert loaded(_cli("--help"), unwanted) == ["[]"]
    assert loaded(_cli("kpis", "--help"), unwanted) == ["[]"]


def test_kpis_imports_the_kpi_engine_and_no_statistics_or_aws() -> None:
    folder = str(ROOT / "examples" / "seed-run")
    unwanted = (
        *ANALYSIS,
        *STATISTICS,
        *AWS,
        "distkpi.domain.judging.settings",
        "distkpi.adapters",
        "distkpi.services",
        "distkpi.reporting",
        "distkpi_cli.local",
        "distkpi_cli.node",
        "yaml",
        "jsonschema",
        "requests",
        "concurrent.futures",  # the digest's threads are two plain ones, no pool
        "moto",
    )
    assert loaded(_cli("kpis", folder), unwanted) == ["[]"]
    assert loaded(_cli("kpis", folder, "--json"), unwanted) == ["[]"]
    # and it did compute them: the engine is what it paid for
    assert loaded(_cli("kpis", folder), KPI_ENGINE) == [repr(sorted(KPI_ENGINE))]
