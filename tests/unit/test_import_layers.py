"""The layers of docs/architecture.md, kept: domain code is pure (it imports no adapter,
service or entry point), and adapters import no service or entry point. Every import
counts, also one inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "distkpi" / "distkpi"
FORBIDDEN = {
    "domain": ("distkpi.adapters", "distkpi.services", "distkpi.entry", "distkpi_cli.local"),
    "adapters": ("distkpi.services", "distkpi.entry", "distkpi_cli.local"),
    "node": ("distkpi.services", "distkpi.entry", "distkpi_cli.local"),
}


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_what_it_may(layer: str) -> None:
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for line, module in imports(path)
        if module.startswith(FORBIDDEN[layer])
    ]
    assert offending == [], "\n".join(offending)


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from distkpi.services.publish import Publisher\n")
    assert imports(module) == [(2, "distkpi.services.publish")]
