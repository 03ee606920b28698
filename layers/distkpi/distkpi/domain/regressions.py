"""A regression the default branch alerted on, with a life: `open` when its alert goes out,
`acknowledged` by a person (`distkpi regressions ack`), `accepted` (its run accepted), or
`fixed` when a later run's value of its KPI on that branch is back inside the range it had
before (or better). Each change is kept: who, when, and a note."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Protocol

SEPARATOR = ":"  # of an id: <run>:<config>:<kpi>
# a range's ends are means of logs, so a value equal to every value it came from may differ
# from its ends in the last bits: compared with this relative slack
SLACK = 1e-9
SYSTEM = "distkpi"  # who made a change no person made (opened, fixed)


class RegressionState(StrEnum):
    OPEN = "open"
    ACKNOWLEDGED = "acknowledged"
    ACCEPTED = "accepted"
    FIXED = "fixed"


# the states a regression is still someone's to look at
UNRESOLVED = frozenset({RegressionState.OPEN, RegressionState.ACKNOWLEDGED})


class Judged(Protocol):
    """What a regression is opened from: one KPI of one config as its run was judged."""

    @property
    def config(self) -> str: ...
    @property
    def kpi(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def baseline(self) -> float | None: ...
    @property
    def low(self) -> float | None: ...
    @property
    def high(self) -> float | None: ...


@dataclass(frozen=True)
class StateChange:
    state: RegressionState
    who: str
    at: str
    note: str = ""

    def to_json(self) -> dict[str, str]:
        return {"state": self.state.value, "who": self.who, "at": self.at, "note": self.note}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StateChange:
        return cls(
            RegressionState(str(data["state"])),
            str(data["who"]),
            str(data["at"]),
            str(data.get("note", "")),
        )


@dataclass(frozen=True)
class Regression:
    """One regressed KPI of one config of a push's run on a branch."""

    repo: str
    branch: str
    model: str
    config: str
    kpi: str
    run_id: str  # the run that regressed
    sha: str
    opened_at: str
    value: float | None  # the regressed run's value
    baseline: float | None
    low: float | None  # the range the KPI had before
    high: float | None
    state: RegressionState = RegressionState.OPEN
    culprit: str | None = None  # the commit a bisection found
    diagnosis: str | None = None  # how the bisection ended, in words
    fixed_by: str | None = None  # the later run back in range
    history: tuple[StateChange, ...] = ()

    @property
    def id(self) -> str:
        return regression_id(self.run_id, self.config, self.kpi)

    def moved(self, state: RegressionState, who: str, at: str, note: str = "") -> Regression:
        return replace(
            self, state=state, history=(*self.history, StateChange(state, who, at, note))
        )

    def back_in_range(self, value: float | None) -> bool:
        """Whether ``value`` is inside the range the KPI had before, or beyond it on the
        better side (the side away from the one the regression left it by)."""
        if value is None:
            return False
        low = None if self.low is None else self.low - abs(self.low) * SLACK
        high = None if self.high is None else self.high + abs(self.high) * SLACK
        if self.value is not None and low is not None and self.value < low:
            return value >= low
        if self.value is not None and high is not None and self.value > high:
            return value <= high
        return (low is None or value >= low) and (high is None or value <= high)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state.value,
            "repo": self.repo,
            "branch": self.branch,
            "model": self.model,
            "config": self.config,
            "kpi": self.kpi,
            "run_id": self.run_id,
            "sha": self.sha,
            "opened_at": self.opened_at,
            "value": self.value,
            "baseline": self.baseline,
            "low": self.low,
            "high": self.high,
            "culprit": self.culprit,
            "diagnosis": self.diagnosis,
            "fixed_by": self.fixed_by,
            "history": [c.to_json() for c in self.history],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Regression:
        def number(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        return cls(
            repo=str(data["repo"]),
            branch=str(data["branch"]),
            model=str(data["model"]),
            config=str(data["config"]),
            kpi=str(data["kpi"]),
            run_id=str(data["run_id"]),
            sha=str(data["sha"]),
            opened_at=str(data["opened_at"]),
            value=number("value"),
            baseline=number("baseline"),
            low=number("low"),
            high=number("high"),
            state=RegressionState(str(data["state"])),
            culprit=data.get("culprit"),
            diagnosis=data.get("diagnosis"),
            fixed_by=data.get("fixed_by"),
            history=tuple(StateChange.from_json(c) for c in data.get("history", ())),
        )


def regression_id(run_id: str, config: str, kpi: str) -> str:
    return SEPARATOR.join((run_id, config, kpi))


def run_of(regression: str) -> str | None:
    """The run an id names (its first part), None for what is no id."""
    parts = regression.split(SEPARATOR)
    return parts[0] if len(parts) == 3 and all(parts) else None


def opened(
    *,
    repo: str,
    branch: str,
    model: str,
    run_id: str,
    sha: str,
    at: str,
    regressed: Iterable[Judged],
) -> list[Regression]:
    """A new regression, `open`, for each regressed KPI."""
    return [
        Regression(
            repo,
            branch,
            model,
            j.config,
            j.kpi,
            run_id,
            sha,
            at,
            j.value,
            j.baseline,
            j.low,
            j.high,
            history=(StateChange(RegressionState.OPEN, SYSTEM, at, "alerted"),),
        )
        for j in regressed
    ]
