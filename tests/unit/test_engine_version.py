"""A node's summaries are used only by a collector of the same engine version, so the version
must change whenever what parsing gives can change: it is derived from the engine's sources
(domain/logs/engineversion.py), so that a changed reader changes it by itself, and the node
(its job image) and the collector (its layer) install the same sources and compute the same."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from distkpi.domain.logs.engineversion import (
    DERIVED_FROM,
    LOGS,
    engine_sources,
    engine_version,
    version_of,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "distkpi" / "distkpi"


def copy_of_the_package(where: Path) -> Path:
    """The package as the layer and the job image ship it: its sources, no bytecode."""
    shutil.copytree(PACKAGE, where / "distkpi", ignore=shutil.ignore_patterns("__pycache__"))
    return where / "distkpi" / "domain" / "logs"


def test_the_sources_are_the_readers_the_scanner_and_what_they_read_with() -> None:
    sources = engine_sources()
    assert sources[:2] == ("../accuracy.py", "../patterns.py")
    assert {"registry.py", "logsummary.py", "linescan.py", "filesummary.py"} <= set(sources)
    assert {"readers/base.py", "readers/megatron.py", "readers/torchtitan.py"} <= set(sources)
    assert "engineversion.py" in sources


def test_a_changed_reader_changes_the_version(tmp_path: Path) -> None:
    logs = copy_of_the_package(tmp_path)
    assert version_of(logs) == engine_version()
    reader = logs / "readers" / "torchtitan.py"
    reader.write_text(reader.read_text().replace('(b"tps: ",)', '(b"tps:",)'))
    changed = version_of(logs)
    assert changed != engine_version()
    # and so does a reader added, or a change to what the readers read accuracy with
    (logs / "readers" / "newfamily.py").write_text('"""A new log family."""\n')
    assert version_of(logs) not in {changed, engine_version()}
    accuracy = logs.parent / "accuracy.py"
    before = version_of(logs)
    accuracy.write_text(accuracy.read_text() + "\n")
    assert version_of(logs) != before


def test_no_version_written_by_hand_is_this_engines() -> None:
    # manifests of the images before the version was derived state 1 to 6: another engine
    assert DERIVED_FROM <= engine_version() < 2 * DERIVED_FROM < 2**53
    assert engine_version() not in range(1, 7)


def test_the_node_and_the_collector_compute_the_same_version(tmp_path: Path) -> None:
    """The job image and the layer each install a copy of the package: the version a fresh
    interpreter computes from a copy is the one computed here."""
    copy_of_the_package(tmp_path)
    code = (
        "from distkpi.domain.logs.engineversion import LOGS, engine_version\n"
        "print(LOGS)\nprint(engine_version())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    where, version = done.stdout.split()
    assert Path(where) == tmp_path / "distkpi" / "domain" / "logs" != LOGS
    assert int(version) == engine_version()


def test_the_version_is_not_computed_at_import() -> None:
    code = (
        "import distkpi.domain.kpis.runfolder, distkpi_cli.node.runner\n"
        "from distkpi.domain.logs.engineversion import engine_version\n"
        "print(engine_version.cache_info().currsize)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == ["0"]
