"""A suite's golden loss curve: per-step values with their spread, as Megatron-LM's
functional tests keep theirs (``{"lm loss": {"start_step", "end_step", "step_interval",
"values": {step: value}}}``), plus each step's min and max over the runs it was made from
and a relative tolerance around them.

``distkpi golden --from RUN_FOLDER --runs N`` makes one from N runs of one commit (the A/A
way to set the tolerance: the spread of unchanged code); a config's training loss is then
judged against it step by step: the KPI ``golden_loss`` is its largest relative difference
from the golden mean, and a step outside [min, max] widened by the tolerance fails an
enforced one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from distkpi.domain import averages
from distkpi.domain.contracts import describe_errors
from distkpi.exceptions import ContractError

DEFAULT_TOLERANCE = 0.02
# a golden curve's steps at most (a file a repository keeps, read by the collector)
MAX_GOLDEN_STEPS = 10_000


class GoldenSeries(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    start_step: int
    end_step: int
    step_interval: int = 1
    values: dict[int, float] = Field(max_length=MAX_GOLDEN_STEPS)
    min: dict[int, float] | None = None
    max: dict[int, float] | None = None


class GoldenCurve(BaseModel):
    """The file: the loss series, and the relative tolerance around its min..max."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)

    loss: GoldenSeries = Field(alias="lm loss")
    # the other curves Megatron's functional tests keep beside the loss (seconds per step,
    # bytes), read when present; ``"nan"`` marks a step they did not record
    iteration_time: GoldenSeries | None = Field(None, alias="iteration-time")
    mem_allocated: GoldenSeries | None = Field(None, alias="mem-allocated-bytes")
    mem_max_allocated: GoldenSeries | None = Field(None, alias="mem-max-allocated-bytes")
    max_rel_diff: float = Field(DEFAULT_TOLERANCE, ge=0)
    runs: int | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_golden(raw: bytes, name: str) -> GoldenCurve:
    try:
        return GoldenCurve.model_validate_json(raw)
    except ValidationError as exc:
        raise ContractError(f"golden curve {name}: {describe_errors(exc)}") from exc


def golden_from(curves: Sequence[Mapping[int, float]], tolerance: float) -> GoldenCurve:
    """The golden curve of N runs' loss curves: each step that every run reported, its mean,
    min and max."""
    if not curves:
        raise ValueError("no loss curve to make a golden one from")
    steps = sorted(set.intersection(*(set(c) for c in curves)))
    if not steps:
        raise ValueError("the runs' loss curves share no step")
    interval = min((b - a for a, b in pairwise(steps)), default=1)
    series = GoldenSeries(
        start_step=steps[0],
        end_step=steps[-1],
        step_interval=interval,
        values={s: averages.fmean(c[s] for c in curves) for s in steps},
        min={s: min(c[s] for c in curves) for s in steps},
        max={s: max(c[s] for c in curves) for s in steps},
    )
    return GoldenCurve.model_validate(
        {"lm loss": series, "max_rel_diff": tolerance, "runs": len(curves)}
    )


@dataclass(frozen=True)
class GoldenCheck:
    largest: float  # the largest relative difference from the golden mean
    step: int  # where it is
    outside: tuple[int, ...]  # the steps beyond min..max widened by the tolerance


def against_golden(curve: Mapping[int, float], golden: GoldenCurve) -> GoldenCheck | None:
    """A loss curve against the golden one over the steps both have; None: none shared."""
    series = golden.loss
    steps = [s for s in sorted(series.values) if s in curve]
    if not steps:
        return None
    tol = golden.max_rel_diff
    low = series.min or series.values
    high = series.max or series.values

    def diff(step: int) -> float:
        mean = series.values[step]
        return abs(curve[step] - mean) / abs(mean) if mean else 0.0

    worst = max(steps, key=diff)
    outside = tuple(
        s
        for s in steps
        if not low[s] - tol * abs(low[s]) <= curve[s] <= high[s] + tol * abs(high[s])
    )
    return GoldenCheck(diff(worst), worst, outside)
