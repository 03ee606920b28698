"""A JSON Schema as the rows of a reference table: every property, nested ones by their
dotted path (`configs[].name`, `verdict.confirm.screen`), with its type, whether it is
required, its default and its description."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Schema = Mapping[str, Any]


@dataclass(frozen=True)
class Row:
    path: str
    type: str
    required: bool
    default: str
    meaning: str


def rows(schema: Schema) -> list[Row]:
    """Every property of ``schema`` (an object), depth first in the schema's order."""
    return list(_object_rows(schema, schema, ""))


def _resolve(node: Schema, root: Schema) -> Schema:
    ref = node.get("$ref")
    if not ref:
        return node
    name = ref.rsplit("/", 1)[-1]
    defs = root.get("$defs", {})
    return {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}


def _alternatives(node: Schema, root: Schema) -> list[Schema]:
    """The non-null alternatives a property may take."""
    node = _resolve(node, root)
    options = node.get("anyOf") or node.get("oneOf")
    if not options:
        return [node]
    out = [_resolve(o, root) for o in options]
    return [o for o in out if o.get("type") != "null"]


def properties(schema: Schema) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(dotted path, its property node as it stands in the schema, required) of every
    property of ``schema``, depth first; nodes inside `$defs` are shared by every path
    that refers to them."""
    yield from _walk(schema, schema, "")


def _walk(node: Schema, root: Schema, prefix: str) -> Iterator[tuple[str, Any, bool]]:
    required = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        yield path, child, name in required
        for option in _alternatives(child, root):
            if option.get("properties"):
                yield from _walk(option, root, f"{path}.")
            items = _resolve(option.get("items", {}), root)
            if option.get("type") == "array" and items.get("properties"):
                yield from _walk(items, root, f"{path}[].")
            values = option.get("additionalProperties")
            if isinstance(values, Mapping) and _resolve(values, root).get("properties"):
                yield from _walk(_resolve(values, root), root, f"{path}.<name>.")


def _object_rows(node: Schema, root: Schema, prefix: str) -> Iterator[Row]:
    for path, child, required in _walk(node, root, prefix):
        resolved = _resolve(child, root)
        yield Row(
            path=path,
            type=" or ".join(type_of(o, root) for o in _alternatives(child, root)),
            required=required,
            default=_default(resolved),
            meaning=" ".join(str(resolved.get("description", "")).split()),
        )


def _default(node: Schema) -> str:
    if "default" not in node:
        return ""
    return json.dumps(node["default"])


_BOUNDS = (
    ("minimum", "≥"),
    ("exclusiveMinimum", ">"),
    ("maximum", "≤"),
    ("exclusiveMaximum", "<"),
)


def type_of(node: Schema, root: Schema) -> str:
    """A short human type: `integer ≥ 1`, `list of string`, `one of "a", "b"`."""
    node = _resolve(node, root)
    if "const" in node:
        return f"exactly {json.dumps(node['const'])}"
    if "enum" in node:
        return "one of " + ", ".join(json.dumps(v) for v in node["enum"])
    if "anyOf" in node or "oneOf" in node:
        return " or ".join(type_of(o, root) for o in _alternatives(node, root))
    kind = node.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(k for k in kind if k != "null")
    if kind == "array":
        return _list_type(node, root)
    if kind == "object" and not node.get("properties"):
        return _map_type(node, root)
    return _scalar_type(node, kind)


def _list_type(node: Schema, root: Schema) -> str:
    items = node.get("items")
    item = type_of(items, root) if items else ""
    item = f"({item})" if " or " in item else item
    text = f"list of {item}" if items else "list"
    sized = _sizes(node, "minItems", "maxItems", "item")
    return f"{text} ({sized})" if sized else text


def _map_type(node: Schema, root: Schema) -> str:
    values = node.get("additionalProperties")
    named = node.get("patternProperties", {})
    if not isinstance(values, Mapping) and len(named) == 1:
        values = next(iter(named.values()))
    if isinstance(values, Mapping):
        return f"map of name to {type_of(values, root)}"
    return "object"


def _scalar_type(node: Schema, kind: str) -> str:
    bounds = [f"{sign} {node[key]}" for key, sign in _BOUNDS if key in node]
    text = f"{kind} {', '.join(bounds)}" if bounds else kind
    if "pattern" in node:
        text += f" matching `{node['pattern']}`"
    sized = _sizes(node, "minLength", "maxLength", "character")
    if sized:
        text += f" ({sized})"
    if "format" in node:
        text += f" ({node['format']})"
    return text


def _sizes(node: Schema, low: str, high: str, unit: str) -> str:
    parts = []
    if low in node:
        parts.append(f"at least {node[low]} {unit}{'s' if node[low] != 1 else ''}")
    if high in node:
        parts.append(f"at most {node[high]} {unit}{'s' if node[high] != 1 else ''}")
    return ", ".join(parts)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped, and outside code
    spans `<` and `>` as entities (`<config>` would otherwise be an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def markdown_table(table: list[Row], with_default: bool = True) -> str:
    head = "| field | type | required | default | meaning |\n| --- | --- | --- | --- | --- |"
    if not with_default:
        head = "| field | type | required | meaning |\n| --- | --- | --- | --- |"
    lines = [head]
    for row in table:
        cells = [f"`{row.path}`", cell(row.type), "yes" if row.required else "no"]
        if with_default:
            cells.append(f"`{cell(row.default)}`" if row.default else "")
        cells.append(cell(row.meaning))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
