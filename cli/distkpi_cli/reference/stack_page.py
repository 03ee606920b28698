"""The stack's reference: template.yaml's parameters and outputs, with their descriptions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from distkpi_cli.reference.schema_tables import cell


class _TemplateLoader(yaml.SafeLoader):
    """Reads CloudFormation's short tags (`!Ref`, `!Sub`, ...) as plain values."""


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)  # type: ignore[arg-type]


_TemplateLoader.add_multi_constructor("!", _any_tag)


def read_template(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(path.read_text(), Loader=_TemplateLoader)
    return loaded


def page(template: dict[str, Any]) -> str:
    out = [
        "# The stack: parameters and outputs",
        "",
        "What `template.yaml` asks for when you deploy it (`sam deploy --guided` prompts for "
        "each parameter) and what it gives back. [Deploy on AWS](../tutorials/deploy-on-aws.md) "
        "says which you must set.",
        "",
        "## Parameters",
        "",
        "| parameter | type | default | allowed | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, p in template["Parameters"].items():
        default = p.get("Default")
        allowed = ", ".join(f"`{v}`" for v in p.get("AllowedValues", ()))
        shown = "(required)" if default is None else "`" + (cell(str(default)) or "''") + "`"
        out.append(
            f"| `{name}` | {p.get('Type', '')} | {shown} | {allowed} "
            f"| {cell(p.get('Description', ''))} |"
        )
    out += ["", "## Outputs", "", "| output | meaning |", "| --- | --- |"]
    for name, o in template.get("Outputs", {}).items():
        out.append(f"| `{name}` | {cell(o.get('Description', ''))} |")
    return "\n".join(out) + "\n"
