"""A run report's section per diagnosed config: where a step's time went, base against head,
per role (a stacked bar each, drawn as inline SVG), the operations whose time changed most,
and links to both commits' traces (Chrome-trace JSON: Perfetto's ui.perfetto.dev or
chrome://tracing open them). Every string a trace gave is escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from distkpi.domain.diagnosis.texts import diagnosis_line

# the parts of a step, in the order drawn, and their colours
PARTS = (
    ("compute_s", "compute", "#4e79a7"),
    ("exposed_communication_s", "exposed communication", "#e15759"),
    ("data_s", "data loading", "#f28e2b"),
    ("other_s", "other host time", "#76b7b2"),
    ("idle_s", "idle", "#bab0ac"),
)
WIDTH, BAR, GAP, LABEL = 520, 22, 8, 60


def diagnosis_sections(diagnoses: Mapping[str, Mapping[str, Any]]) -> str:
    if not diagnoses:
        return ""
    parts = [_section(config, d) for config, d in sorted(diagnoses.items())]
    return "<h2>Why it changed: profiled base and head</h2>" + "".join(parts)


def _section(config: str, d: Mapping[str, Any]) -> str:
    head = f"<h3>{escape(config)}</h3>"
    roles = d.get("roles") or {}
    if not roles:
        problems = "; ".join(d.get("problems") or ["no traces"])
        return f"{head}<p>Not diagnosed: {escape(problems)}</p>"
    shas = (
        f"<p>base {escape(str(d.get('base_sha', ''))[:10])} against head "
        f"{escape(str(d.get('head_sha', ''))[:10])}, {int(d.get('steps') or 0)} profiled steps"
        f"{_cost(d)}: <b>{escape(diagnosis_line(d))}</b></p>"
    )
    bars = "".join(_bars(role, sides) for role, sides in sorted(roles.items()))
    problems = "".join(f"<li>{escape(p)}</li>" for p in d.get("problems") or [])
    return (
        head
        + shas
        + bars
        + _legend()
        + _top_ops(d.get("top_ops") or [])
        + _traces(d.get("traces") or {})
        + (f"<ul>{problems}</ul>" if problems else "")
    )


def _cost(d: Mapping[str, Any]) -> str:
    hours = d.get("gpu_hours")
    return f" ({hours:.3g} GPU-hours)" if isinstance(hours, int | float) else ""


def _bars(role: str, sides: Mapping[str, Mapping[str, Any]]) -> str:
    """One role's two bars (ms per step), on one scale: the longer step fills the width."""
    longest = max((s.get("step_s") or 0.0) for s in sides.values()) or 1.0
    rows = []
    for i, side in enumerate(("base", "head")):
        values = sides.get(side)
        if values is None:
            continue
        y, x = i * (BAR + GAP), float(LABEL)
        rects = [f'<text x="0" y="{y + 15}" font-size="12">{side}</text>']
        for key, name, colour in PARTS:
            w = (values.get(key) or 0.0) / longest * (WIDTH - LABEL - 70)
            ms = (values.get(key) or 0.0) * 1000
            rects.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BAR}" fill="{colour}">'
                f"<title>{name}: {ms:.3g} ms per step</title></rect>"
            )
            x += w
        step = (values.get("step_s") or 0.0) * 1000
        rects.append(f'<text x="{x + 6:.1f}" y="{y + 15}" font-size="12">{step:.3g} ms</text>')
        rows.append("".join(rects))
    height = 2 * (BAR + GAP)
    svg = (
        f'<svg width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(role)}: time per step, base and head">{"".join(rows)}</svg>'
    )
    return f"<p><b>{escape(role)}</b> (mean of its ranks, per step)</p>{svg}"


def _legend() -> str:
    keys = " ".join(
        f'<span style="color:{colour}">&#9632;</span> {name}' for _, name, colour in PARTS
    )
    return f"<p>{keys}</p>"


def _top_ops(ops: Sequence[Mapping[str, Any]]) -> str:
    if not ops:
        return ""
    rows = "".join(
        f"<tr><td>{escape(str(o.get('role')))}</td><td>{escape(str(o.get('name')))}</td>"
        f"<td>{_ms(o.get('base_s'))}</td><td>{_ms(o.get('head_s'))}</td>"
        f"<td>{_ms(o.get('change_s'), signed=True)}</td></tr>"
        for o in ops
    )
    return (
        "<p>The operations whose time per step changed most</p><table><tr><th>role</th>"
        "<th>operation</th><th>base ms</th><th>head ms</th><th>change ms</th></tr>"
        f"{rows}</table>"
    )


def _traces(traces: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> str:
    links = []
    for side in ("base", "head"):
        for role, files in sorted((traces.get(side) or {}).items()):
            for f in files:
                key = str(f.get("file", ""))
                links.append(
                    f"<li>{side} {escape(role)} rank {escape(str(f.get('rank')))}: "
                    f'<a href="../../{escape(key)}">{escape(key)}</a> '
                    f"({int(f.get('bytes') or 0)} bytes)</li>"
                )
    if not links:
        return ""
    return (
        "<p>Traces (Chrome trace JSON: open them in ui.perfetto.dev or chrome://tracing)</p>"
        f"<ul>{''.join(links)}</ul>"
    )


def _ms(seconds: Any, *, signed: bool = False) -> str:
    if not isinstance(seconds, int | float):
        return ""
    return f"{seconds * 1000:+.3g}" if signed else f"{seconds * 1000:.3g}"
