"""Every generated file, by its path in the repository, and what the code makes of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from distkpi_cli.reference import cli_page, kpis_page, logs_page, runfolder_page, stack_page, suite

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = Path("layers/distkpi/distkpi/schemas")
REFERENCE = Path("docs/reference")


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / SCHEMAS / name).read_text())
    return loaded


def generated() -> dict[Path, str]:
    suite_schema = suite.suite_schema()
    return {
        SCHEMAS / "suite.schema.json": json.dumps(suite_schema, indent=2, ensure_ascii=False)
        + "\n",
        REFERENCE / "suite.md": suite.page(suite_schema),
        REFERENCE / "run-folder.md": runfolder_page.page(
            _schema("run.schema.json"), _schema("node.schema.json")
        ),
        REFERENCE / "cli.md": cli_page.page(),
        REFERENCE / "kpis.md": kpis_page.page(_schema("kpis.schema.json")),
        REFERENCE / "log-formats.md": logs_page.page(),
        REFERENCE / "stack.md": stack_page.page(stack_page.read_template(ROOT / "template.yaml")),
    }
