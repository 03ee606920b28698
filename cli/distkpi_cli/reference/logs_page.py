"""The log-format reference: every reader of the log registry (domain/logs/registry.py) in
the order a line is offered to them, with what it looks for and its module's account of
the format."""

from __future__ import annotations

import sys

from distkpi_cli.reference.schema_tables import cell


def _needles(needles: tuple[bytes, ...]) -> str:
    return ", ".join(f"`{cell(n.decode())}`" for n in needles)


def page() -> str:
    from distkpi.domain.logs.registry import READERS

    out = [
        "# Log formats read",
        "",
        "The built-in readers, in the order a log line is offered to them "
        "(`layers/distkpi/distkpi/domain/logs/registry.py`): the first that claims a line "
        "reads it. A line is looked at only when it holds one of a reader's needles; it is "
        "recognised wherever it appears in a log, whatever else the log holds. A suite's "
        "`metrics` patterns take precedence over them for the KPIs they name "
        "([the suite](suite.md)).",
        "",
        "| # | reader | family | a line it reads holds one of |",
        "| --- | --- | --- | --- |",
    ]
    modules: dict[str, str] = {}
    for i, reader in enumerate(READERS, 1):
        module = reader.read.__module__
        family = module.rsplit(".", 1)[-1]
        modules.setdefault(family, sys.modules[module].__doc__ or "")
        needles = _needles(reader.needles)
        out.append(f"| {i} | `{reader.name}` | [{family}](#{family}) | {needles} |")
    out.append("")
    for family, doc in modules.items():
        out += [f"## {family}", "", doc.strip(), ""]
    return "\n".join(out)
