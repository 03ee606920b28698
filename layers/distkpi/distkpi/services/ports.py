"""What every service is given rather than reaching for: a metrics counter and a clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol


class Counter(Protocol):
    def __call__(self, name: str, value: int = 1) -> None: ...


def no_metrics(name: str, value: int = 1) -> None:
    del name, value


def utcnow() -> datetime:
    return datetime.now(UTC)


Clock = Callable[[], datetime]
