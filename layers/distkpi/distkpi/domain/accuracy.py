"""Quality metrics with a direction, and targets with named parts.

An evaluation reports one number (top-1, a word error rate) or an object of named numbers
(Mask R-CNN's ``{"BBOX": 0.377, "SEGM": 0.339}``). A target is the same: a number, or
parts that must all be reached. ``higher`` metrics reach a target at or above it, ``lower``
ones (error rates, perplexity) at or below it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

Accuracy = float | dict[str, float]
Target = float | Mapping[str, float]


class Direction(StrEnum):
    HIGHER = "higher"
    LOWER = "lower"


def at_least_as_good(value: float, other: float, direction: Direction) -> bool:
    return value >= other if direction is Direction.HIGHER else value <= other


def reaches(
    value: Accuracy,
    target: Target,
    direction: Direction,
    parts: Mapping[str, Direction] | None = None,
) -> bool:
    """Whether an evaluation reaches the target: every named part of it, when it has parts,
    each in its own direction where ``parts`` names one (Stable Diffusion's FID is lower,
    its CLIP score higher)."""
    if isinstance(target, Mapping):
        if not isinstance(value, dict):
            return False
        return all(
            name in value and at_least_as_good(value[name], part, _part(name, direction, parts))
            for name, part in target.items()
        )
    return at_least_as_good(headline(value, None), target, direction)


def _part(name: str, direction: Direction, parts: Mapping[str, Direction] | None) -> Direction:
    return parts.get(name, direction) if parts else direction


def dominates(
    earlier: Accuracy,
    later: Accuracy,
    direction: Direction,
    parts: Mapping[str, Direction] | None = None,
) -> bool:
    """Whether ``earlier`` reaches every target ``later`` reaches (so ``later`` can be
    forgotten): at least as good in each part ``later`` has."""
    if isinstance(later, dict):
        return isinstance(earlier, dict) and all(
            name in earlier and at_least_as_good(earlier[name], v, _part(name, direction, parts))
            for name, v in later.items()
        )
    return not isinstance(earlier, dict) and at_least_as_good(earlier, later, direction)


def headline(value: Accuracy, target: Target | None) -> float:
    """The one number a KPI row shows: the value, or the part the target names first (the
    evaluation's first part when the target has no parts)."""
    if not isinstance(value, dict):
        return value
    if isinstance(target, Mapping):
        for name in target:
            if name in value:
                return value[name]
    return next(iter(value.values()))


def reached_sign(direction: Direction, unicode: bool = False) -> str:
    """How an evaluation compares with the target it reaches, for a row's label."""
    if direction is Direction.HIGHER:
        return "≥" if unicode else ">="
    return "≤" if unicode else "<="


def describe_target(target: Target) -> str:
    if isinstance(target, Mapping):
        return ",".join(f"{name}={part:g}" for name, part in target.items())
    return f"{target:g}"


def target_text(target: Target) -> str:
    """The target as the command line takes it (parse_target reads it back exactly)."""
    if isinstance(target, Mapping):
        return ",".join(f"{name}={part!r}" for name, part in target.items())
    return str(target)


def describe(value: Accuracy) -> str:
    if isinstance(value, dict):
        return ",".join(f"{name}={part:.4f}" for name, part in value.items())
    return f"{value:.4f}"


def parse_target(text: str) -> Target:
    """``X`` or ``NAME=X[,NAME=X...]`` (the command line's form); ValueError when neither."""
    if "=" not in text:
        return float(text)
    parts: dict[str, float] = {}
    for item in text.split(","):
        name, sep, number = item.partition("=")
        name = name.strip()
        if not sep or not name or name in parts:
            raise ValueError(f"{item!r} is not NAME=X with a new NAME")
        parts[name] = float(number)
    return parts
