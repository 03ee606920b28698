"""A bisection's course: its steps so far, what to run next, and how it ends.

The line is the first-parent commits after the good one, the bad one last. The culprit lies
between the last commit known good and the first known bad; each step measures the midpoint
and halves that range, until one commit is left (found). A step that ends `error` is
retried once and a step on neither side is run once more; a second time ends the bisection
`inconclusive` with the range it had narrowed to, as does running out of steps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from distkpi.domain.bisect.deciding import Ends, Side
from distkpi.domain.bisect.line import Commit

MAX_BISECT_RUNS = 8  # the default bound's cap


class BisectState(StrEnum):
    RUNNING = "running"
    FOUND = "found"
    INCONCLUSIVE = "inconclusive"
    CANCELLED = "cancelled"  # a newer bisection of the same branch, model and configs


def default_max_runs(commits: int) -> int:
    """Enough steps for a line of ``commits`` candidates: ceil(log2(n)), at most 8."""
    return min(MAX_BISECT_RUNS, max(1, math.ceil(math.log2(max(commits, 1)))))


def step_run_id(bad_run_id: str, number: int) -> str:
    """The number'th run of the bisection of ``bad_run_id``: one name, whoever starts it."""
    return f"{bad_run_id}-b{number}"


@dataclass(frozen=True)
class Step:
    """One run at a commit of the line; ``side`` None while it runs."""

    sha: str
    run_id: str
    side: Side | None = None
    gpu_hours: float = 0.0
    # the run's values of the regressed KPIs (deciding.kpi_key -> value)
    values: Mapping[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "run_id": self.run_id,
            "side": None if self.side is None else self.side.value,
            "gpu_hours": self.gpu_hours,
            "values": dict(self.values),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        side = data.get("side")
        return cls(
            str(data["sha"]),
            str(data["run_id"]),
            None if side is None else Side(side),
            float(data.get("gpu_hours") or 0.0),
            {str(k): float(v) for k, v in (data.get("values") or {}).items()},
        )


@dataclass(frozen=True)
class Bisection:
    """One bisection of a branch's regression, from its bad run to its culprit."""

    repo: str
    branch: str
    model: str
    bad_run_id: str  # the run of the pushed head that regressed: the bisection's id
    good: str
    bad: str
    configs: tuple[str, ...]  # the regressed ones, the only ones each step runs
    line: tuple[Commit, ...]
    ends: tuple[Ends, ...]
    max_runs: int
    created_at: str
    paired: bool = False  # each step an A/B of the good commit against the midpoint
    # what each step runs: the regressed configs, and the base config where a speedup or
    # efficiency regressed (they are measured against it); empty: ``configs``
    step_configs: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    state: BisectState = BisectState.RUNNING
    culprit: str | None = None
    why: str = ""  # how it ended, in words
    low: int = -1  # the range narrowed to: line[low] good (-1: the good commit) ...
    high: int = -1  # ... line[high] bad (-1 until set: the last)
    updated_at: str = ""
    revision: int = 0  # how often it was stored (the repository's condition)

    @property
    def runs_configs(self) -> tuple[str, ...]:
        return self.step_configs or self.configs

    @property
    def gpu_hours(self) -> float:
        return sum(s.gpu_hours for s in self.steps)

    def _which(self) -> dict[str, Any]:
        """Which bisection it is: the regressed run of a branch's model, and its two ends."""
        return {
            "repo": self.repo,
            "branch": self.branch,
            "model": self.model,
            "bad_run_id": self.bad_run_id,
            "good": self.good,
            "bad": self.bad,
        }

    def summary(self) -> dict[str, Any]:
        """What `distkpi bisections --json` and `distkpi local --json` say of it. A cancelled
        one (a newer bisection covers it) is inconclusive, its ``why`` says so; a step's side
        is null while it runs, and `error` or `neither` for a step that was run again."""
        state = BisectState.INCONCLUSIVE if self.state is BisectState.CANCELLED else self.state
        return {
            **self._which(),
            "culprit": self.culprit,
            "state": state.value,
            "why": self.why,
            "steps": [
                {
                    "sha": s.sha,
                    "run_id": s.run_id,
                    "side": None if s.side is None else s.side.value,
                    "gpu_hours": s.gpu_hours,
                }
                for s in self.steps
            ],
            "configs": list(self.configs),
            "gpu_hours": self.gpu_hours,
            "commits": len(self.line),
            "created_at": self.created_at,
        }

    def commit(self, sha: str) -> Commit | None:
        return next((c for c in self.line if c.sha == sha), None)

    def to_json(self) -> dict[str, Any]:
        return {
            **self._which(),
            "configs": list(self.configs),
            "line": [c.to_json() for c in self.line],
            "ends": [e.to_json() for e in self.ends],
            "max_runs": self.max_runs,
            "created_at": self.created_at,
            "paired": self.paired,
            "step_configs": list(self.step_configs),
            "steps": [s.to_json() for s in self.steps],
            "state": self.state.value,
            "culprit": self.culprit,
            "why": self.why,
            "low": self.low,
            "high": self.high,
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Bisection:
        return cls(
            repo=str(data["repo"]),
            branch=str(data["branch"]),
            model=str(data["model"]),
            bad_run_id=str(data["bad_run_id"]),
            good=str(data["good"]),
            bad=str(data["bad"]),
            configs=tuple(str(c) for c in data.get("configs", ())),
            line=tuple(Commit.from_json(c) for c in data.get("line", ())),
            ends=tuple(Ends.from_json(e) for e in data.get("ends", ())),
            max_runs=int(data["max_runs"]),
            created_at=str(data["created_at"]),
            paired=bool(data.get("paired", False)),
            step_configs=tuple(str(c) for c in data.get("step_configs", ())),
            steps=tuple(Step.from_json(s) for s in data.get("steps", ())),
            state=BisectState(data.get("state", BisectState.RUNNING.value)),
            culprit=data.get("culprit"),
            why=str(data.get("why", "")),
            low=int(data.get("low", -1)),
            high=int(data.get("high", -1)),
            updated_at=str(data.get("updated_at", "")),
        )


@dataclass(frozen=True)
class RunAt:
    """Start a step run at ``sha`` (named ``run_id``)."""

    sha: str
    run_id: str


@dataclass(frozen=True)
class Ended:
    state: BisectState
    culprit: str | None
    why: str
    low: int
    high: int


def narrowed(line: Sequence[Commit], steps: Sequence[Step]) -> tuple[int, int]:
    """(last known good, first known bad) as indexes of the line; -1 is the good commit."""
    index = {c.sha: i for i, c in enumerate(line)}
    low, high = -1, len(line) - 1
    for step in steps:
        i = index.get(step.sha)
        if i is None:
            continue
        if step.side is Side.GOOD and low < i < high:
            low = i
        elif step.side is Side.BAD and low < i < high:
            high = i
    return low, high


def next_move(bisection: Bisection) -> RunAt | Ended | None:
    """What follows the steps so far: a run, the end, or None while a step runs."""
    line, steps = bisection.line, bisection.steps
    if steps and steps[-1].side is None:
        return None
    low, high = narrowed(line, steps)
    run_id = step_run_id(bisection.bad_run_id, len(steps) + 1)
    if steps and steps[-1].side in (Side.ERROR, Side.NEITHER):
        last = steps[-1]
        tries = [s for s in steps if s.sha == last.sha]
        if len(tries) < 2:
            return RunAt(last.sha, run_id)
        sides = {s.side for s in tries}
        how = (
            "ended error twice"
            if sides == {Side.ERROR}
            else "was on neither side twice"
            if sides == {Side.NEITHER}
            else "was on neither side, and its run again ended error"
            if tries[0].side is Side.NEITHER
            else "ended error, and its run again was on neither side"
        )
        why = f"the step at {last.sha[:10]} {how}"
        return Ended(BisectState.INCONCLUSIVE, None, why, low, high)
    if high - low == 1:
        culprit = line[high].sha
        why = f"{culprit[:10]} is bad and its parent good"
        return Ended(BisectState.FOUND, culprit, why, low, high)
    measured = len({s.sha for s in steps})
    if measured >= bisection.max_runs:
        why = f"{measured} step(s) taken, the most this suite allows; {high - low} commits left"
        return Ended(BisectState.INCONCLUSIVE, None, why, low, high)
    return RunAt(line[(low + high) // 2].sha, run_id)
