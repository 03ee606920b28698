"""The suite's JSON Schema, from the suite model with each field's meaning
(suite_fields.MEANINGS), and its reference page."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from distkpi_cli.reference.schema_tables import markdown_table, properties, rows
from distkpi_cli.reference.suite_fields import MEANINGS

# set by distkpi as it reads a file, never by a suite
_INTERNAL = ("where",)


class MissingMeaning(Exception):
    """A suite field has no row in suite_fields.MEANINGS, or a row names no field."""


def suite_schema() -> dict[str, Any]:
    from distkpi.domain.planning.suites import Suite

    schema = Suite.model_json_schema(mode="validation")
    made = _made_defaults(Suite)
    for name in _INTERNAL:
        schema["properties"].pop(name, None)
        if name in schema.get("required", ()):
            schema["required"].remove(name)
    paths = set()
    for path, node, _ in properties(schema):
        paths.add(path)
        meaning = MEANINGS.get(path)
        if meaning is None:
            raise MissingMeaning(
                f"suite field {path} has no meaning in cli/distkpi_cli/reference/suite_fields.py"
            )
        if node.get("description", meaning) != meaning:
            raise MissingMeaning(f"suite field {path}: two meanings for one definition")
        node["description"] = meaning
        if path in made and "default" not in node:
            node["default"] = made[path]
    unknown = sorted(set(MEANINGS) - paths)
    if unknown:
        raise MissingMeaning(f"suite_fields.py names fields the suite has not: {unknown}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **{k: v for k, v in schema.items() if k != "title"},
        "title": "A benchmark suite (infra/suites/<model>.yaml), generated from the suite model",
    }


def _made_defaults(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """The defaults pydantic makes when a field is left out (a `default_factory`, which its
    JSON Schema does not state), by path, where they are plain JSON; a nested model's own
    fields are looked at instead of the model made whole (each has its row)."""
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if field.default_factory is None:
            continue
        made = field.get_default(call_default_factory=True)
        if isinstance(made, BaseModel):
            out.update(_made_defaults(type(made), f"{prefix}{name}."))
            continue
        try:
            json.dumps(made)
        except TypeError:
            continue
        out[f"{prefix}{name}"] = made
    return out


PAGE_HEAD = """\
# The suite

A suite is one YAML file per model in the bucket's `suites/` prefix (locally,
`infra/suites/`): what every node runs, how the logs are read, the matrix of configs and
how the verdict is reached. Its JSON Schema is `layers/distkpi/distkpi/schemas/suite.schema.json`;
an editor with a YAML language server checks a suite as you type with
`# yaml-language-server: $schema=<path to suite.schema.json>` on its first line.

A suite with an unknown field, a missing required one or a value out of range is refused
with one line naming the file and each bad field, e.g. `typo.yaml: invalid suite:
target_accuracy: Field required; target_acuracy: Extra inputs are not permitted`; on the
webhook that suite gets an `error` status and the others still run.

Paths: `a.b` is field `b` of the object `a`; `configs[].name` is `name` of each config.
A default of `null` means unset.

"""


def page(schema: dict[str, Any]) -> str:
    return PAGE_HEAD + markdown_table(rows(schema))
