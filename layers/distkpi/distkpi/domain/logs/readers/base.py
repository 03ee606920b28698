"""What every reader shares: the reader itself (its needles and the observations it emits
into a summary), the number every pattern reads, and the checks a parsed number passes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distkpi.domain.logs.bounds import MAX_PASS, fits
from distkpi.domain.logs.logsummary import (
    THROUGHPUT,
    TRAINING_LOSS,
    Level,
    LogSummary,
    Observation,
    Per,
)

ReadLine = Callable[[str, LogSummary], bool]


@dataclass(frozen=True)
class Reader:
    """One log family. ``needles``: byte strings one of which every line it reads contains
    (the scanner hands on only such lines); ``read``: emits what a line measures as named
    observations (``out.observe``; the run's facts, such as its direction or a crash, are
    set on the summary), and says whether the line was its own (no later reader then sees
    it)."""

    name: str
    needles: tuple[bytes, ...]
    read: ReadLine


# Every pattern runs in time linear in the line's length: numbers are atomic groups, so a
# failed match never re-splits a run of digits, and no unbounded wildcard sits between two
# parts that can both repeat.
NUM = r"((?>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?))"
# a loss as Python and C print one, NaN and infinity included (`nan`, `-nan`, `inf`, `NAN`)
LOSS = r"((?>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)))"
NUMBER = re.compile(NUM)

NUMBER_DOES_NOT_FIT = "number out of range ignored"
PASS_DOES_NOT_FIT = f"pass number over {MAX_PASS} ignored"


def finite(text: str, out: LogSummary) -> float | None:
    value = float(text)
    if fits(value):
        return value
    out.note(NUMBER_DOES_NOT_FIT)
    return None


def number(value: Any, out: LogSummary) -> float | None:
    """A JSON number that can be a KPI; None (noted when out of range) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        parsed = float(value)
    except OverflowError:
        parsed = math.inf
    if fits(parsed):
        return parsed
    out.note(NUMBER_DOES_NOT_FIT)
    return None


def pass_number(value: object, out: LogSummary) -> int | None:
    """A pass (epoch) number, from an int or a string of digits; None, noted, when too big."""
    if isinstance(value, str):
        if len(value) > len(str(MAX_PASS)):
            out.note(PASS_DOES_NOT_FIT)
            return None
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    if value > MAX_PASS:
        out.note(PASS_DOES_NOT_FIT)
        return None
    return value


def step_number(text: str) -> int | None:
    """The step an observation belongs to, from a line's digits; None (unnoted: the
    figure is kept, only not placed) when too big to be one."""
    return int(text) if len(text) <= len(str(MAX_PASS)) and int(text) <= MAX_PASS else None


def positive_throughput(text: str, level: Level, out: LogSummary, per: Per = Per.PROCESS) -> None:
    value = finite(text, out)
    if value is not None and value > 0:
        out.observe(Observation(THROUGHPUT, value, "samples/s", level=level, per=per))


def positive(text: str, out: LogSummary) -> float | None:
    value = finite(text, out)
    return value if value is not None and value > 0 else None


def loss(step: int | None, text: str, out: LogSummary) -> None:
    """A training loss: NaN and infinity are counted by the summary, a finite value kept
    when it can be a KPI."""
    value = float(text)
    if math.isfinite(value) and not fits(value):
        out.note(NUMBER_DOES_NOT_FIT)
        return
    out.observe(Observation(TRAINING_LOSS, value, "", step))


def without_separators(text: str) -> str:
    """`6,697` as `6697`: torchtitan prints token rates with thousands separators."""
    return text.replace(",", "")
