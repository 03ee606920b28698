"""Base against head: each role's ranks averaged (with their spread), the part whose change
explains the step-time change, the operations that changed most, and the one-line summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from statistics import fmean
from typing import Any

from distkpi.domain.diagnosis.breakdown import Collective, RankBreakdown

FIELDS = (
    "step_s",
    "compute_s",
    "communication_s",
    "exposed_communication_s",
    "idle_s",
    "data_s",
    "other_s",
)
# a step's parts, each with the name `largest_change` gives it
PARTS = {
    "compute": "compute_s",
    "communication": "exposed_communication_s",
    "idle": "idle_s",
    "data": "data_s",
    "other": "other_s",
}
MIN_STEP_CHANGE = 0.03  # a smaller change of the step time is noise: nothing explains it
MIN_SHARE = 0.5  # a part explains the change when it moved at least half as far, same way
UNCHANGED = 0.03
TOP_OPS = 10


@dataclass(frozen=True)
class Side:
    """One role on one side (base or head): its ranks' mean per field, and their range."""

    ranks: int
    steps: int
    mean: dict[str, float]
    spread: dict[str, tuple[float, float]]
    collectives: dict[str, Collective]
    ops: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {
            **{k: round(v, 9) for k, v in self.mean.items()},
            "ranks": self.ranks,
            "steps": self.steps,
            "spread": {k: [round(lo, 9), round(hi, 9)] for k, (lo, hi) in self.spread.items()},
            "collectives": {
                kind: {f.name: round(getattr(c, f.name), 9) for f in fields(c)}
                for kind, c in self.collectives.items()
            },
        }


@dataclass(frozen=True)
class Change:
    """Where the step-time change of one role went."""

    role: str
    step_change: float  # head - base, seconds per step
    relative: float  # of the base step
    part: str | None  # the part that explains it, or None when nothing does


@dataclass(frozen=True)
class Diagnosis:
    base_sha: str | None
    head_sha: str | None
    roles: dict[str, dict[str, Side]]  # role -> {"base": Side, "head": Side}
    change: Change | None
    top_ops: list[dict[str, Any]]
    traces: dict[str, Any]

    @property
    def largest_change(self) -> str | None:
        return self.change.part if self.change else None

    def to_json(self) -> dict[str, Any]:
        steps = {s.steps for sides in self.roles.values() for s in sides.values()}
        return {
            "base_sha": self.base_sha,
            "head_sha": self.head_sha,
            "steps": min(steps) if steps else 0,
            "roles": {
                role: {side: s.to_json() for side, s in sides.items()}
                for role, sides in self.roles.items()
            },
            "largest_change": self.largest_change,
            "top_ops": self.top_ops,
            "traces": self.traces,
        }


def side(ranks: Sequence[RankBreakdown]) -> Side:
    """The ranks of one role, averaged: seconds per step, collectives and op times."""
    if not ranks:
        raise ValueError("a side needs at least one rank")
    values = {f: [getattr(r, f) for r in ranks] for f in FIELDS}
    kinds = sorted({k for r in ranks for k in r.collectives})
    names = {n for r in ranks for n in r.ops}
    zero = Collective(0, 0, 0)
    return Side(
        ranks=len(ranks),
        steps=min(r.steps for r in ranks),
        mean={f: fmean(v) for f, v in values.items()},
        spread={f: (min(v), max(v)) for f, v in values.items()},
        collectives={
            k: Collective(
                fmean(r.collectives.get(k, zero).count for r in ranks),
                fmean(r.collectives.get(k, zero).bytes for r in ranks),
                fmean(r.collectives.get(k, zero).time_s for r in ranks),
            )
            for k in kinds
        },
        ops={n: fmean(r.ops.get(n, 0.0) for r in ranks) for n in names},
    )


def explain(role: str, base: Side, head: Side) -> Change:
    """The part that moved at least half as far as the step, the same way, when the step
    moved by MIN_STEP_CHANGE of itself or more; else None (noise, or outside the steps)."""
    change = head.mean["step_s"] - base.mean["step_s"]
    relative = change / base.mean["step_s"] if base.mean["step_s"] > 0 else 0.0
    deltas = {part: head.mean[f] - base.mean[f] for part, f in PARTS.items()}
    part, moved = max(deltas.items(), key=lambda kv: kv[1] * (1 if change >= 0 else -1))
    explains = abs(relative) >= MIN_STEP_CHANGE and moved * change > 0
    return Change(
        role, change, relative, part if explains and abs(moved) >= MIN_SHARE * abs(change) else None
    )


def diagnose(
    base: Mapping[str, Sequence[RankBreakdown]],
    head: Mapping[str, Sequence[RankBreakdown]],
    *,
    base_sha: str | None = None,
    head_sha: str | None = None,
    traces: dict[str, Any] | None = None,
) -> Diagnosis:
    """Roles present on both sides, compared; the role whose step changed most (relative)
    decides `largest_change`."""
    roles = {r: {"base": side(base[r]), "head": side(head[r])} for r in sorted(base) if r in head}
    changes = [explain(r, s["base"], s["head"]) for r, s in roles.items()]
    change = max(changes, key=lambda c: abs(c.relative), default=None)
    return Diagnosis(base_sha, head_sha, roles, change, top_ops(roles), traces or {})


def top_ops(roles: Mapping[str, Mapping[str, Side]], n: int = TOP_OPS) -> list[dict[str, Any]]:
    rows = []
    for role, sides in roles.items():
        b, h = sides["base"].ops, sides["head"].ops
        for name in set(b) | set(h):
            rows.append((role, name, b.get(name, 0.0), h.get(name, 0.0)))
    rows.sort(key=lambda r: (-abs(r[3] - r[2]), r[0], r[1]))
    return [
        {"role": role, "name": name, "base_s": round(bs, 9), "head_s": round(hs, 9),
         "change_s": round(hs - bs, 9)}
        for role, name, bs, hs in rows[:n]
    ]  # fmt: skip


def summary(d: Diagnosis) -> str:
    """`step time +12% (trainer 10.2 -> 11.4 ms): communication +38% per step (all_reduce
    2.1 -> 2.9 ms), compute unchanged`, or why nothing explains it."""
    if d.change is None:
        return "no role on both sides: nothing to compare"
    c = d.change
    sides = d.roles[c.role]
    base, head = sides["base"], sides["head"]
    role = "" if c.role == "trainer" else f"{c.role} "
    head_line = (
        f"{role}step time {_pct(c.relative)} ({_ms(base.mean['step_s'])} -> "
        f"{_ms(head.mean['step_s'])} ms per step)"
    )
    if c.part is None:
        return f"{head_line}: no part explains it (noise, or outside the profiled steps)"
    field = "communication_s" if c.part == "communication" else PARTS[c.part]
    detail = _detail(c.part, base, head)
    rest = "compute" if c.part != "compute" else "communication"
    rest_field = PARTS[rest] if rest == "compute" else "communication_s"
    return (
        f"{head_line}: {c.part} {_change(base.mean[field], head.mean[field])} per step"
        f"{detail}, {rest} {_rest(base.mean[rest_field], head.mean[rest_field])}"
    )


def _detail(part: str, base: Side, head: Side) -> str:
    if part == "communication":
        kinds = set(base.collectives) | set(head.collectives)
        zero = Collective(0, 0, 0)

        def moved(k: str) -> float:
            return abs(head.collectives.get(k, zero).time_s - base.collectives.get(k, zero).time_s)

        if not kinds:
            return ""
        k = max(sorted(kinds), key=moved)
        b, h = base.collectives.get(k, zero), head.collectives.get(k, zero)
        return f" ({k} {_ms(b.time_s)} -> {_ms(h.time_s)} ms, {_n(b.count)} -> {_n(h.count)} calls)"
    return f" ({_ms(base.mean[PARTS[part]])} -> {_ms(head.mean[PARTS[part]])} ms)"


def _change(base: float, head: float) -> str:
    return _pct((head - base) / base) if base > 0 else f"+{_ms(head - base)} ms"


def _rest(base: float, head: float) -> str:
    if base > 0 and abs(head - base) / base < UNCHANGED:
        return "unchanged"
    return _change(base, head)


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g}"


def _n(x: float) -> str:
    return f"{x:g}"
