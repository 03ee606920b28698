"""KPIs a suite's own patterns read from its logs (suite and run.json `metrics:`).

The patterns come from the repository under test and the logs from the code under test,
so both are matched by RE2, whose time is linear in the text whatever the pattern: no
pattern and no line can make the collector slow. A pattern is checked (it compiles, it has
its named group) when the suite is read, and compiled once per process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any

import re2
from pydantic import BaseModel, ConfigDict, Field, field_validator

from distkpi.domain.logs.bounds import fits
from distkpi.domain.logs.logsummary import Level, LogSummary, Per

MAX_PATTERN = 1000
Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN)]


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    return options


def _compile(pattern: str | bytes) -> Any:
    return re2.compile(pattern, _options())


def _checked(pattern: str, group: str | None) -> str:
    """The pattern, or a ValueError saying why RE2 will not have it."""
    try:
        compiled = _compile(pattern)
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
    # what one matched value counts (logsummary.Per)
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


def parse_time(text: str) -> float | None:
    """Seconds since the epoch of a log's timestamp: unix seconds, or a date and time
    (`2021-03-04 05:06:07,890`, `[2021/03/04 05:06:07]`, ISO 8601; UTC unless it says)."""
    text = text.strip().strip("[]").strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) else None
    if len(text) < 19 or len(text) > 40:
        return None
    date, rest = text[:10].replace("/", "-"), text[11:].replace(",", ".")
    try:
        moment = datetime.fromisoformat(f"{date}T{rest}")
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


@dataclass(frozen=True)
class DeclaredReader:
    """A suite's metrics compiled: triggers for the line scanner, and the reading of a line."""

    metrics: DeclaredMetrics
    throughput: Any
    accuracy: Any
    start: Any
    time: Any
    triggers: tuple[Any, ...]

    def read(self, line: str, out: LogSummary) -> None:
        at = self._time(line, out) if self.start is not None and self.start.search(line) else None
        if at is not None:
            out.mark_start(at)
        value = self._value(self.throughput, line, out) if self.throughput is not None else None
        if value is not None and value > 0:
            per = self.metrics.throughput.per if self.metrics.throughput else Per.PROCESS
            out.add_throughput(value, Level.ITERATION, per, declared=True)
        if self.accuracy is not None:
            accuracy = self._value(self.accuracy, line, out)
            if accuracy is not None:
                out.add_accuracy(accuracy, None, self._time(line, out), declared=True)

    @staticmethod
    def _value(pattern: Any, line: str, out: LogSummary) -> float | None:
        m = pattern.search(line)
        if m is None or m.group("value") is None:
            return None
        text = m.group("value")
        try:
            value = float(text)
        except ValueError:
            out.note("a declared pattern's value is not a number; skipped")
            return None
        if not fits(value):
            out.note("number out of range ignored")
            return None
        return value

    def _time(self, line: str, out: LogSummary) -> float | None:
        if self.time is None:
            return None
        m = self.time.search(line)
        if m is None or m.group("time") is None:
            return None
        at = parse_time(m.group("time"))
        if at is None:
            out.note("a time_marks time is not a date and time or unix seconds; skipped")
        return at


def _trigger(pattern: str) -> Any:
    """The pattern over a whole chunk of the log, line by line (`^`/`$` at each line)."""
    options = _options()
    options.never_nl = True
    return re2.compile(b"(?m)" + pattern.encode(), options)


@lru_cache(maxsize=32)
def reader_for(metrics: DeclaredMetrics) -> DeclaredReader:
    throughput = metrics.throughput.pattern if metrics.throughput else None
    accuracy = metrics.test_accuracy.pattern if metrics.test_accuracy else None
    marks = metrics.time_marks
    wanted = [p for p in (throughput, accuracy, marks.start if marks else None) if p]
    return DeclaredReader(
        metrics=metrics,
        throughput=_compile(throughput) if throughput else None,
        accuracy=_compile(accuracy) if accuracy else None,
        start=_compile(marks.start) if marks else None,
        time=_compile(marks.pattern) if marks else None,
        triggers=tuple(_trigger(p) for p in wanted),
    )
