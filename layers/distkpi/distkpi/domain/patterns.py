"""A suite's own patterns for the KPIs its logs state (suite and run.json `metrics:`), and
what one throughput report counts.

The patterns come from the repository under test and the logs from the code under test,
so both are matched by RE2, whose time is linear in the text whatever the pattern. A
pattern is checked (it compiles, it has its named group) when the suite is read;
logs/declared.py compiles and applies them.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

import re2
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)


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

    @model_serializer(mode="wrap")
    def _stated_only(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Only what the suite states travels (run.json keeps a suite's own keys)."""
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


# `value: 'num / den'`: two named groups of the line and one operator, never evaluated code
_EXPRESSION = re.compile(r"\s*([A-Za-z_]\w{0,31})\s*([-+*/])\s*([A-Za-z_]\w{0,31})\s*")
Expression = Annotated[str, Field(min_length=1, max_length=80)]


def parse_expression(text: str) -> tuple[str, str, str]:
    """`'num / den'` as (left group, operator, right group); ValueError when it is not one."""
    m = _EXPRESSION.fullmatch(text)
    if m is None:
        raise ValueError(
            f"value {text!r} is not two group names and one of + - * / (e.g. 'num / den')"
        )
    return m.group(1), m.group(2), m.group(3)


class NumberPattern(_Declared):
    """A pattern whose `value` group is the number, or, with `value: 'a / b'`, two named
    groups of the same line combined by one operator (+ - * /). A number may have thousands
    separators and a unit suffix (`6,697`, `33.94GiB`, `1.2k`, `3.5e+03`)."""

    pattern: Pattern
    value: Expression | None = None

    @model_validator(mode="after")
    def _has_groups(self) -> Any:
        if self.value is None:
            _checked(self.pattern, "value")
            return self
        left, _, right = parse_expression(self.value)
        for group in (left, right):
            _checked(self.pattern, group)
        return self

    def groups(self) -> tuple[str, str, str] | None:
        return parse_expression(self.value) if self.value is not None else None


class RatePattern(NumberPattern):
    # what one matched value counts
    per: Per


class StepTimePattern(NumberPattern):
    # the unit of a number that states none
    unit: Literal["s", "ms"] = "s"


class LossPattern(NumberPattern):
    """A training loss; a `step` group, when the pattern has one, is its step."""


class MemoryPattern(NumberPattern):
    # the unit of a number that states none; which processes' memory it is
    unit: Literal["B", "KiB", "MiB", "GiB", "KB", "MB", "GB"] = "MiB"
    role: Literal["trainer", "pserver"] | None = None


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
    # samples/s too, as a value derived from two groups (`value: 'num / den'`)
    samples_per_s: RatePattern | None = None
    test_accuracy: AccuracyPattern | None = None
    time_marks: TimeMarks | None = None
    tokens_per_s: RatePattern | None = None
    step_time_s: StepTimePattern | None = None
    loss: LossPattern | None = None
    gpu_memory: MemoryPattern | None = None

    @model_validator(mode="after")
    def _one_throughput(self) -> Any:
        if self.throughput is not None and self.samples_per_s is not None:
            raise ValueError("throughput and samples_per_s are the same KPI: state one")
        return self

    def kpis(self) -> tuple[str, ...]:
        """The KPIs the suite's patterns state, which the built-in readers leave to them."""
        stated = {
            "throughput": self.throughput or self.samples_per_s,
            "test_accuracy": self.test_accuracy,
            "tokens_per_s": self.tokens_per_s,
            "step_time_s": self.step_time_s,
            "loss": self.loss,
            "gpu_memory": self.gpu_memory,
        }
        return tuple(k for k, v in stated.items() if v is not None)
