"""KPIs a suite's own patterns (domain/patterns.py) read from its logs, compiled once per
process and matched by RE2, whose time is linear in the text whatever the pattern: no
pattern and no line can make the collector slow."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import re2

from distkpi.domain.logs.bounds import fits
from distkpi.domain.logs.logsummary import Level, LogSummary
from distkpi.domain.patterns import DeclaredMetrics, Per, compile_pattern, re2_options


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
    options = re2_options()
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
        throughput=compile_pattern(throughput) if throughput else None,
        accuracy=compile_pattern(accuracy) if accuracy else None,
        start=compile_pattern(marks.start) if marks else None,
        time=compile_pattern(marks.pattern) if marks else None,
        triggers=tuple(_trigger(p) for p in wanted),
    )
