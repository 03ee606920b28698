"""The layers of docs/architecture.md, kept: domain code is pure (it imports no adapter,
service or entry point), adapters import no service or entry point, services reach AWS and
GitHub only through their ports (no adapter), the report draws what it is given, and the
node runner and the product never import the local stack. Inside domain, each concern
imports only the ones below it, and no module comes back to itself. Every import counts,
also one inside a function or under TYPE_CHECKING."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "distkpi" / "distkpi"
CLI = ROOT / "cli" / "distkpi_cli"
PRODUCT = ("distkpi.adapters", "distkpi.services", "distkpi.entry")
FORBIDDEN = {
    PACKAGE / "domain": (
        "distkpi.adapters",
        "distkpi.services",
        "distkpi.entry",
        "distkpi.reporting",
        "distkpi_cli",
    ),
    PACKAGE / "adapters": ("distkpi.services", "distkpi.entry", "distkpi_cli"),
    PACKAGE / "services": ("distkpi.adapters", "distkpi.entry", "distkpi_cli", "boto3", "requests"),
    PACKAGE / "reporting": ("distkpi.adapters", "distkpi.services", "distkpi.entry", "distkpi_cli"),
    PACKAGE / "entry": ("distkpi_cli",),
    CLI / "node": ("distkpi.services", "distkpi.entry", "distkpi_cli.local"),
}
# what every concern of domain shares (each imports nothing of domain but one another)
SHARED = {
    "accuracy",
    "patterns",
    "contracts",
    "commit_status",
    "signing",
    "layout",
    "untrusted",
    "durations",
    "averages",
    "parse_settings",
}
# domain's concerns (a subpackage, or a module at its top) and those each may import
DOMAIN_BELOW = {
    **{name: SHARED for name in SHARED},
    "logs": SHARED,
    "diagnosis": SHARED,
    "kpis": SHARED | {"logs"},
    "judging": SHARED | {"kpis", "logs"},
    "github": SHARED | {"judging", "kpis", "diagnosis"},
    "records": SHARED | {"github", "judging", "kpis"},
    "history_rows": SHARED | {"records", "judging", "kpis"},
    "planning": SHARED | {"github", "judging", "kpis", "records", "diagnosis"},
    "bisect": SHARED | {"github", "judging", "kpis", "records", "planning"},
    "purpose": SHARED | {"records"},
    "chat": SHARED | {"github", "judging", "kpis", "records", "planning", "bisect"},
    "regressions": SHARED,
}


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN), ids=lambda p: p.name)
def test_each_layer_imports_only_what_it_may(layer: Path) -> None:
    assert list(layer.rglob("*.py")), f"{layer} holds no module: the check would see nothing"
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted(layer.rglob("*.py"))
        for line, module in imports(path)
        if module.startswith(FORBIDDEN[layer])
    ]
    assert offending == [], "\n".join(offending)


def concern_of(module: str) -> str:
    return module.removeprefix("distkpi.domain.").split(".")[0]


def domain_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted((PACKAGE / "domain").rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def test_each_concern_of_domain_imports_only_those_below_it() -> None:
    concerns = {concern_of(m) for m, _ in domain_modules() if m != "distkpi.domain"}
    assert concerns <= set(DOMAIN_BELOW), f"give {concerns - set(DOMAIN_BELOW)} a place"
    offending = [
        f"{path.relative_to(ROOT)}:{line} ({concern_of(module)}) imports {imported}"
        for module, path in domain_modules()
        if module != "distkpi.domain"
        for line, imported in imports(path)
        if imported.startswith("distkpi.domain.")
        and concern_of(imported) != concern_of(module)
        and concern_of(imported) not in DOMAIN_BELOW[concern_of(module)]
    ]
    assert offending == [], "\n".join(offending)


def test_no_domain_module_comes_back_to_itself() -> None:
    graph = {
        module: {m for _, m in imports(path) if m.startswith("distkpi.domain.")}
        for module, path in domain_modules()
    }
    state: dict[str, str] = {}

    def cycle_from(module: str, trail: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return [*trail, module, target]
            if target not in state and (found := cycle_from(target, [*trail, module])):
                return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            assert (found := cycle_from(module, [])) is None, " -> ".join(found)


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from distkpi.services.publish import Publisher\n")
    assert imports(module) == [(2, "distkpi.services.publish")]
