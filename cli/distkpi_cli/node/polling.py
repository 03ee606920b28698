"""The pauses between a node's polls of the run folder: short at first, since what it waits
for (the other nodes, the collector's decision) is most often there already or a moment
away, then doubling up to ``poll_s``, so that a long wait costs a request per ``poll_s``."""

from __future__ import annotations

from collections.abc import Iterator

FIRST_S = 0.05


def pauses(poll_s: float, first_s: float = FIRST_S) -> Iterator[float]:
    pause = min(first_s, poll_s)
    while True:
        yield pause
        pause = min(pause * 2, poll_s)
