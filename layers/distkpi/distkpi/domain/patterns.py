"""A suite's own patterns for the KPIs its logs state (suite and run.json `metrics:`), and
what one throughput report counts.

The patterns come from the repository under test and the logs from the code under test,
so both are matched by RE2, whose time is linear in the text whatever the pattern. A
pattern is checked (it compiles, it has its named group) when the suite is read;
logs/declared.py compiles and applies them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import re2
from pydantic import BaseModel, ConfigDict, Field, field_validator


class Per(StrEnum):
    """What one throughput report counts: one GPU, one process (its log), one node, or the
    whole job (kpis.py adds them up accordingly)."""

    CARD = "card"
    PROCESS = "process"
    NODE = "node"
    JOB = "job"


MAX_PATTERN = 1000
Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN)]


def re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    return options


def compile_pattern(pattern: str | bytes) -> Any:
    return re2.compile(pattern, re2_options())


def _checked(pattern: str, group: str | None) -> str:
    """The pattern, or a ValueError saying why RE2 will not have it."""
    try:
        compiled = compile_pattern(pattern)
    except re2.error as exc:
        why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(f"not a valid RE2 pattern: {why}") from None
    if group is not None and group not in compiled.groupindex:
        raise ValueError(f"has no (?P<{group}>...) group")
    return pattern


class _Declared(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AccuracyPattern(_Declared):
    """A pattern whose `value` group is the KPI's number."""

    pattern: Pattern

    @field_validator("pattern")
    @classmethod
    def _has_value(cls, pattern: str) -> str:
        return _checked(pattern, "value")


class ThroughputPattern(AccuracyPattern):
    # what one matched value counts
    per: Per


class TimeMarks(_Declared):
    # a line matching `start` starts the clock; `pattern`'s `time` group dates each line
    start: Pattern
    pattern: Pattern

    @field_validator("start")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        return _checked(pattern, None)

    @field_validator("pattern")
    @classmethod
    def _has_time(cls, pattern: str) -> str:
        return _checked(pattern, "time")


class DeclaredMetrics(_Declared):
    throughput: ThroughputPattern | None = None
    test_accuracy: AccuracyPattern | None = None
    time_marks: TimeMarks | None = None

    def kpis(self) -> tuple[str, ...]:
        return tuple(k for k in ("throughput", "test_accuracy") if getattr(self, k) is not None)
