"""What people read of a diagnosis: one line, from the diagnosis as stored and shown (the
contract's JSON), so that every place that has it (the check run, the alert, a pull
request's comment) says the same:

    communication +38% per step (all_reduce 2.1 -> 2.9 ms), compute unchanged

and, after the regression it explains, `1x8 throughput -12%: ` before it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the KPIs whose regression is about where a step's time went: what a diagnosis explains
TIMING_KPIS = ("throughput", "tokens_per_s", "speedup", "efficiency", "step_time_s")
UNCHANGED = 0.03  # a part that moved less than this share of itself is unchanged
# the field each part's change is told by: communication all of it, the rest as split
TOLD_BY = {
    "compute": "compute_s",
    "communication": "communication_s",
    "idle": "idle_s",
    "data": "data_s",
    "other": "other_s",
}


def diagnosis_line(diagnosis: Mapping[str, Any]) -> str:
    """The part that changed, by how much per step, the collective (or time) behind it,
    and computation (or, when computation changed, communication) beside it."""
    roles = diagnosis.get("roles") or {}
    sides = {r: s for r, s in roles.items() if "base" in s and "head" in s}
    if not sides:
        return "no traces of both commits to compare"
    role = max(sorted(sides), key=lambda r: abs(_relative(sides[r])))
    base, head = sides[role]["base"], sides[role]["head"]
    who = "" if role == "trainer" else f"{role} "
    part = diagnosis.get("largest_change")
    if part not in TOLD_BY:
        return (
            f"{who}step time {_pct(_relative(sides[role]))}: no part explains it "
            "(noise, or outside the profiled steps)"
        )
    field = TOLD_BY[part]
    rest = "communication" if part == "compute" else "compute"
    return (
        f"{who}{part} {_change(base[field], head[field])} per step{_detail(part, base, head)}, "
        f"{rest} {_rest(base[TOLD_BY[rest]], head[TOLD_BY[rest]])}"
    )


def regression_line(config: str, kpi: str, change: float | None, diagnosis_text: str) -> str:
    """`1x8 throughput -12%: <the diagnosis line>`; ``change`` relative, None if unknown."""
    said = f"{config} {kpi}" + (f" {_pct(change)}" if change is not None else "")
    return f"{said}: {diagnosis_text}"


def _relative(sides: Mapping[str, Mapping[str, Any]]) -> float:
    base, head = sides["base"]["step_s"], sides["head"]["step_s"]
    return (head - base) / base if base > 0 else 0.0


def _detail(part: str, base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    if part != "communication":
        return f" ({_ms(base[TOLD_BY[part]])} -> {_ms(head[TOLD_BY[part]])} ms)"
    b, h = base.get("collectives") or {}, head.get("collectives") or {}
    zero = {"time_s": 0.0}
    kinds = sorted(set(b) | set(h))
    if not kinds:
        return ""
    kind = max(kinds, key=lambda k: abs(h.get(k, zero)["time_s"] - b.get(k, zero)["time_s"]))
    return f" ({kind} {_ms(b.get(kind, zero)['time_s'])} -> {_ms(h.get(kind, zero)['time_s'])} ms)"


def _change(base: float, head: float) -> str:
    return _pct((head - base) / base) if base > 0 else f"+{_ms(head - base)} ms"


def _rest(base: float, head: float) -> str:
    if base > 0 and abs(head - base) / base < UNCHANGED:
        return "unchanged"
    if base == head == 0:
        return "unchanged"
    return _change(base, head)


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2g}" if seconds * 1000 < 10 else f"{seconds * 1000:.0f}"
