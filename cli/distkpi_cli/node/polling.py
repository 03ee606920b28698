"""How a node waits for what other nodes or the collector write to the run folder (the
rendezvous, the others' manifests, the collector's decision after a pair): one poll-until.

The pauses between polls are short at first, since what it waits for is most often there
already or a moment away, then doubling up to ``poll_s``, so that a long wait costs a
request per ``poll_s``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

FIRST_S = 0.05
T = TypeVar("T")


def pauses(poll_s: float, first_s: float = FIRST_S) -> Iterator[float]:
    pause = min(first_s, poll_s)
    while True:
        yield pause
        pause = min(pause * 2, poll_s)


def poll_until(
    attempt: Callable[[], T | None],
    deadline_s: float,
    poll_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T | None:
    """``attempt()`` again until it gives an answer (anything but None), pausing between
    tries as ``pauses`` says; None when ``deadline_s`` have passed with none. An attempt
    ends the wait early by answering (or raising) itself; it is always tried once more
    after the deadline has passed, so what came during the last pause is seen."""
    until, pause = clock() + deadline_s, pauses(poll_s)
    while True:
        found = attempt()
        if found is not None or clock() >= until:
            return found
        sleep(next(pause))
