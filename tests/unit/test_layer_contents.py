"""The Lambda layer (template.yaml's ContentUri) is the product and nothing else: every module
the four handlers can import (at cold start or later, inside a function) is in it, and
everything in it is one of those. The CLI, the local stack and the node runner live in
cli/distkpi_cli, outside it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from distkpi_cli.local.template import load_template, resources_of_type

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = ("webhook", "launcher", "collector", "job_events", "sweeper", "deadlines")
SOURCES = {"distkpi": ROOT / "layers" / "distkpi", "distkpi_cli": ROOT / "cli"}


def layer_root() -> Path:
    template = load_template((ROOT / "template.yaml").read_text())
    (layer,) = resources_of_type(template, "AWS::Serverless::LayerVersion").values()
    return ROOT / layer["ContentUri"] / "distkpi"


def module_file(module: str) -> Path | None:
    """The file of one of our modules, or None for anyone else's."""
    top = module.split(".", maxsplit=1)[0]
    if top not in SOURCES:
        return None
    base = SOURCES[top].joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_by(path: Path, module: str) -> set[str]:
    """Every module an import in ``path`` can name (``from a import b`` names a and a.b)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def closure(handler: str) -> dict[str, Path]:
    """Our modules the handler can reach, with their files: its app.py's imports, their
    imports and the packages above each, transitively."""
    reached: dict[str, Path] = {}
    todo = sorted(imported_by(ROOT / "functions" / handler / "app.py", "app"))
    while todo:
        module = todo.pop()
        path = module_file(module)
        if path is None or module in reached:
            continue
        reached[module] = path
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(imported_by(path, module))
    return reached


@pytest.mark.parametrize("handler", HANDLERS)
def test_what_each_handler_imports_is_in_the_layer(handler: str) -> None:
    layer = layer_root()
    outside = sorted(
        str(p.relative_to(ROOT)) for p in closure(handler).values() if not p.is_relative_to(layer)
    )
    assert outside == []


def test_the_layer_holds_what_the_handlers_import_and_nothing_else() -> None:
    reached = {p for handler in HANDLERS for p in closure(handler).values()}
    layer = layer_root()
    unused = sorted(str(p.relative_to(ROOT)) for p in layer.rglob("*.py") if p not in reached)
    assert unused == []
    assert not list(layer.glob("**/local")) and not list(layer.glob("**/node"))


def test_the_closure_follows_imports_inside_functions(tmp_path: Path) -> None:
    app = tmp_path / "m.py"
    app.write_text("def f():\n    from distkpi.reporting.page import build_report\n")
    assert "distkpi.reporting.page" in imported_by(app, "m")
