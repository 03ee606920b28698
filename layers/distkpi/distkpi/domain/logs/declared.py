"""KPIs a suite's own patterns (domain/patterns.py) read from its logs, compiled once per
process and matched by RE2, whose time is linear in the text whatever the pattern: no
pattern and no line can make the collector slow."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import re2

from distkpi.domain.logs.bounds import MAX_PASS, fits
from distkpi.domain.logs.logsummary import Level, LogSummary
from distkpi.domain.patterns import (
    AccuracyPattern,
    DeclaredMetrics,
    NumberPattern,
    Per,
    compile_pattern,
    re2_options,
)


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


# A number as a suite's pattern captures it: thousands separators (`6,697`), an exponent
# (`3.5e+03`) and a unit suffix (`1.2k`, `33.94GiB`, `850ms`), converted to the KPI's unit.
_QUANTITY = re.compile(
    r"\s*([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([A-Za-z]{0,3})\s*"
)
COUNT = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
MEMORY_MIB = {
    "b": 1 / 2**20,
    "k": 1 / 1024,
    "kb": 1 / 1024,
    "kib": 1 / 1024,
    "m": 1.0,
    "mb": 1.0,
    "mib": 1.0,
    "g": 1024.0,
    "gb": 1024.0,
    "gib": 1024.0,
    "t": 2.0**20,
    "tb": 2.0**20,
    "tib": 2.0**20,
}
TIME_S = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0}
NOT_A_NUMBER = "a declared pattern's value is not a number; skipped"
NONFINITE = frozenset({"nan", "inf", "infinity"})


def quantity(text: str, units: dict[str, float], default: str = "") -> float | None:
    """The number ``text`` states, in the unit ``units`` maps to 1 (a number without a
    suffix is in ``default``); None when it is not one."""
    m = _QUANTITY.fullmatch(text)
    if m is None or not any(c.isdigit() for c in m.group(1)):
        return None
    suffix = m.group(2) or default
    scale = units.get(suffix, units.get(suffix.lower()))
    if scale is None:
        return None
    return float(m.group(1).replace(",", "")) * scale


def _combine(left: float, op: str, right: float) -> float | None:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    return left / right if right != 0 else None


@dataclass(frozen=True)
class _Number:
    """One declared pattern compiled, and how its number is read."""

    spec: NumberPattern | AccuracyPattern
    compiled: Any
    units: dict[str, float]
    default: str = ""

    def read(self, line: str, out: LogSummary) -> tuple[float, Any] | None:
        """The line's number and its match; None (noted when it is not a number)."""
        m = self.compiled.search(line)
        if m is None:
            return None
        groups = self.spec.groups() if isinstance(self.spec, NumberPattern) else None
        if groups is None:
            value = self._quantity(m.group("value"), out)
        else:
            left, op, right = groups
            a, b = self._quantity(m.group(left), out), self._quantity(m.group(right), out)
            value = _combine(a, op, b) if a is not None and b is not None else None
            if value is None and a is not None and b is not None:
                out.note("a declared value divides by zero; skipped")
        if value is None:
            return None
        if not fits(value):
            out.note("number out of range ignored")
            return None
        return value, m

    def _quantity(self, text: str | None, out: LogSummary) -> float | None:
        if text is None:
            return None
        value = quantity(text, self.units, self.default)
        if value is None:
            out.note(NOT_A_NUMBER)
        return value


@dataclass(frozen=True)
class DeclaredReader:
    """A suite's metrics compiled: triggers for the line scanner, and the reading of a line.
    Throughput and accuracy go into the summary marked as declared (the built-in readers'
    are then ignored); the other KPIs into ``own``, which parse_log puts in place of the
    built-in readers' figures at the end."""

    metrics: DeclaredMetrics
    throughput: _Number | None
    accuracy: _Number | None
    start: Any
    time: Any
    triggers: tuple[Any, ...]
    tokens: _Number | None = None
    step_time: _Number | None = None
    loss: _Number | None = None
    memory: _Number | None = None

    def read(self, line: str, out: LogSummary, own: LogSummary) -> None:
        at = self._time(line, out) if self.start is not None and self.start.search(line) else None
        if at is not None:
            out.mark_start(at)
        if (rate := _positive(self.throughput, line, out)) is not None:
            stated = self.metrics.throughput or self.metrics.samples_per_s
            per = stated.per if stated is not None else Per.PROCESS
            out.add_throughput(rate, Level.ITERATION, per, declared=True)
        if self.accuracy is not None and (found := self.accuracy.read(line, out)):
            out.add_accuracy(found[0], None, self._time(line, out), declared=True)
        if (tokens := _positive(self.tokens, line, out)) is not None:
            own.tokens_per_s.add(tokens)
        if (seconds := _positive(self.step_time, line, out)) is not None:
            own.step_time_s.add(seconds)
        if self.loss is not None:
            self._loss(self.loss, line, out, own)
        if (mib := _positive(self.memory, line, out)) is not None:
            role = self.metrics.gpu_memory.role if self.metrics.gpu_memory else None
            own.add_framework_memory(mib, "declared", role)

    @staticmethod
    def _loss(loss: _Number, line: str, out: LogSummary, own: LogSummary) -> None:
        """A loss; a NaN or infinite one is counted, never skipped as not a number."""
        m = loss.compiled.search(line)
        if m is None:
            return
        derived = isinstance(loss.spec, NumberPattern) and loss.spec.value is not None
        text = None if derived else m.group("value")
        if text is not None and text.strip().lower().lstrip("+-") in NONFINITE:
            own.add_loss(_step(m), float(text))
        elif (found := loss.read(line, out)) is not None:
            own.add_loss(_step(found[1]), found[0])

    def adopt(self, own: LogSummary, out: LogSummary) -> None:
        """The declared KPIs' figures in place of the built-in readers'."""
        if self.tokens is not None and self.metrics.tokens_per_s is not None:
            out.tokens_per_s = own.tokens_per_s
            out.tokens_per_s.per = self.metrics.tokens_per_s.per
        if self.step_time is not None:
            out.step_time_s = own.step_time_s
        if self.loss is not None:
            out.loss_by_step, out.last_loss = own.loss_by_step, own.last_loss
            out.nonfinite_losses = own.nonfinite_losses
            out.first_nonfinite_step = own.first_nonfinite_step
        if self.memory is not None:
            out.framework_memory_mib = own.framework_memory_mib
            out.framework_memory_kind = own.framework_memory_kind
            out.framework_memory_role = own.framework_memory_role

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


def _step(m: Any) -> int | None:
    """The `step` group of a loss pattern's match, when it has one and it is a number."""
    try:
        text = m.group("step")
    except (IndexError, re2.error):
        return None
    if text is None or not text.isdigit() or len(text) > len(str(MAX_PASS)):
        return None
    return int(text)


def _positive(number: _Number | None, line: str, out: LogSummary) -> float | None:
    found = number.read(line, out) if number is not None else None
    return found[0] if found is not None and found[0] > 0 else None


def _trigger(pattern: str) -> Any:
    """The pattern over a whole chunk of the log, line by line (`^`/`$` at each line)."""
    options = re2_options()
    options.never_nl = True
    return re2.compile(b"(?m)" + pattern.encode(), options)


def _number(
    spec: NumberPattern | AccuracyPattern | None, units: dict[str, float], default: str = ""
) -> Any:
    if spec is None:
        return None
    return _Number(spec, compile_pattern(spec.pattern), units, default)


@lru_cache(maxsize=32)
def reader_for(metrics: DeclaredMetrics) -> DeclaredReader:
    throughput = metrics.throughput or metrics.samples_per_s
    step_time = metrics.step_time_s
    memory = metrics.gpu_memory
    marks = metrics.time_marks
    numbers: list[NumberPattern | AccuracyPattern | None] = [
        throughput,
        metrics.test_accuracy,
        metrics.tokens_per_s,
        step_time,
        metrics.loss,
        memory,
    ]
    wanted = [n.pattern for n in numbers if n is not None] + ([marks.start] if marks else [])
    return DeclaredReader(
        metrics=metrics,
        throughput=_number(throughput, COUNT),
        accuracy=_number(metrics.test_accuracy, COUNT),
        start=compile_pattern(marks.start) if marks else None,
        time=compile_pattern(marks.pattern) if marks else None,
        triggers=tuple(_trigger(p) for p in dict.fromkeys(wanted)),
        tokens=_number(metrics.tokens_per_s, COUNT),
        step_time=_number(step_time, TIME_S, step_time.unit if step_time else "s"),
        loss=_number(metrics.loss, COUNT),
        memory=_number(memory, MEMORY_MIB, memory.unit if memory else "MiB"),
    )
