"""The reference pages and the suite's JSON Schema are written from the code
(`python -m distkpi_cli.reference`, run by make docs): the committed ones must be what the
code makes now, and every suite field, command, option, KPI, log reader and stack parameter
must have its row, checked here from the code itself rather than from the generator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from distkpi.domain.kpis.catalogue import CATALOGUE
from distkpi.domain.logs.registry import READERS
from distkpi.domain.planning.suites import Suite, load_suites
from distkpi_cli.main import build_parser
from distkpi_cli.reference import suite as suite_reference
from distkpi_cli.reference.cli_page import arguments, commands
from distkpi_cli.reference.generate import ROOT, generated
from distkpi_cli.reference.stack_page import read_template

REFERENCE = ROOT / "docs" / "reference"
REGENERATE = "stale: run `python -m distkpi_cli.reference` (make docs does) and commit"


@pytest.fixture(scope="module")
def fresh() -> dict[Path, str]:
    return generated()


def test_every_generated_file_is_what_the_code_makes_now(fresh: dict[Path, str]) -> None:
    stale = [str(p) for p, text in fresh.items() if (ROOT / p).read_text() != text]
    assert not stale, f"{REGENERATE}: {stale}"


def _fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field of a pydantic model, nested models' by dotted path (`configs[].name`)."""
    out = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        path = f"{prefix}{name}"
        out.append(path)
        for nested, many in _models_in(field.annotation):
            out += _fields(nested, f"{path}[]." if many else f"{path}.")
    return out


def _models_in(annotation: Any, many: bool = False) -> list[tuple[type[BaseModel], bool]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, many)]
    args = getattr(annotation, "__args__", ())
    origin = getattr(annotation, "__origin__", None)
    listed = many or origin in (tuple, list)
    return [found for arg in args for found in _models_in(arg, listed)]


def test_every_suite_field_has_a_row_with_a_meaning() -> None:
    page = (REFERENCE / "suite.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in page.splitlines()
        if line.startswith("| `")
    }
    fields = _fields(Suite)
    assert "configs[].batch_size" in fields and "verdict.confirm.screen" in fields
    assert "metrics.time_marks.start" in fields
    missing = [f for f in fields if f not in rows]
    assert not missing, f"suite fields without a reference row: {missing}"
    empty = [f for f in fields if rows[f].rstrip().endswith("|  |")]
    assert not empty, f"rows without a meaning: {empty}"


def test_a_suite_field_without_a_meaning_stops_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    meanings = dict(suite_reference.MEANINGS)
    del meanings["verdict.window"]
    monkeypatch.setattr(suite_reference, "MEANINGS", meanings)
    with pytest.raises(suite_reference.MissingMeaning) as raised:
        suite_reference.suite_schema()
    assert str(raised.value) == (
        "suite field verdict.window has no meaning in cli/distkpi_cli/reference/suite_fields.py"
    )


def test_the_suite_schema_accepts_every_bundled_suite_and_refuses_a_typo() -> None:
    schema = json.loads((ROOT / "layers/distkpi/distkpi/schemas/suite.schema.json").read_text())
    folder = ROOT / "infra" / "suites"
    assert len(load_suites(folder)) >= 5  # each also valid to the model itself
    for path in sorted(folder.glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    typo = {**yaml.safe_load((folder / "local.yaml").read_text()), "target_acuracy": 0.9}
    with pytest.raises(jsonschema.ValidationError, match="target_acuracy"):
        jsonschema.validate(typo, schema)


def test_every_command_and_option_has_a_row() -> None:
    page = (REFERENCE / "cli.md").read_text()
    parsers = list(commands(build_parser()))
    assert len(parsers) >= 15
    for parser in parsers:
        assert f"## `{parser.prog}`" in page
        section = page.split(f"## `{parser.prog}`", 1)[1].split("\n## ", 1)[0]
        for action in arguments(parser):
            names = action.option_strings or [action.metavar or action.dest]
            for name in names:
                assert f"`{name}`" in section, f"{parser.prog} {name} has no row"


def test_every_kpi_reader_and_stack_parameter_has_a_row() -> None:
    kpis = (REFERENCE / "kpis.md").read_text()
    assert all(f"| `{k.name}` |" in kpis for k in CATALOGUE)
    logs = (REFERENCE / "log-formats.md").read_text()
    assert all(f"| `{r.name}` |" in logs for r in READERS)
    stack = (REFERENCE / "stack.md").read_text()
    template = read_template(ROOT / "template.yaml")
    for name in [*template["Parameters"], *template["Outputs"]]:
        assert f"| `{name}` |" in stack, name


def test_the_cli_page_is_the_same_whatever_the_terminal(
    monkeypatch: pytest.MonkeyPatch, fresh: dict[Path, str]
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    assert generated()[Path("docs/reference/cli.md")] == fresh[Path("docs/reference/cli.md")]


def test_exit_codes_on_the_page_are_the_commands_own() -> None:
    from distkpi_cli.commands.common import FAILURE, USAGE_ERROR

    page = (REFERENCE / "cli.md").read_text()
    assert f"| {FAILURE} | something it relies on failed" in page
    assert f"| {USAGE_ERROR} | its arguments name nothing usable" in page
