"""GitHub's limits on what distkpi asks of it: one paced writer that spreads content-creating
requests (POST, PATCH, PUT, DELETE) under GitHub's 80 a minute and 500 an hour per
installation (or personal token), the wait a throttled answer asks for, and the answers of
reads that repeat, kept with their ETags for conditional requests.

The pacer is a generic cell rate algorithm per rate: each writer claims the next slot of its
key in each (``Slots.claim``, atomic across every Lambda container when the slots live in
the table) and goes once every slot is within its ``burst`` intervals of now. So a rate's
``burst`` writes may go at once, then one every ``interval_s``: in any window of ``w`` s at
most ``burst + w / interval_s``. The defaults: 15 at once then one a second (75 in any
minute, under 80), and 20 at once then one every 7.5 s (500 in any hour).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from distkpi.exceptions import GitHubRateLimitError

CONTENT_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
INTERVAL_S = 1.0  # GitHub: "wait at least one second between each request" that writes
BURST = 15


@dataclass(frozen=True)
class Rate:
    interval_s: float
    burst: int


PER_MINUTE = Rate(INTERVAL_S, BURST)  # 15 + 60 / 1.0 = 75 in any minute (GitHub: 80)
PER_HOUR = Rate(7.5, 20)  # 20 + 3600 / 7.5 = 500 in any hour (GitHub: 500)
# a 429 with neither retry-after nor a spent primary limit: GitHub says wait a minute
SECONDARY_WAIT_S = 60.0
THROTTLED = (403, 429)


class Slots(Protocol):
    def claim(self, key: str, now: float, interval_s: float) -> float:
        """This request's slot for ``key``: the later of the key's next free slot and
        ``now``; the next free slot moves ``interval_s`` past it, atomically."""
        ...

    def claim_by(self, key: str, now: float, interval_s: float, latest: float) -> bool:
        """Claim the key's next slot (as ``claim``) only if it is at ``latest`` or before;
        False, and nothing claimed, when it is later."""
        ...


@dataclass
class MemorySlots:
    """One container's slots (tests, and a stack without a table)."""

    _next: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def claim(self, key: str, now: float, interval_s: float) -> float:
        with self._lock:
            slot = max(self._next.get(key, now), now)
            self._next[key] = slot + interval_s
            return slot

    def claim_by(self, key: str, now: float, interval_s: float, latest: float) -> bool:
        with self._lock:
            slot = max(self._next.get(key, now), now)
            if slot > latest:
                return False
            self._next[key] = slot + interval_s
            return True


@dataclass
class WritePacer:
    slots: Slots
    rates: tuple[Rate, ...] = (PER_MINUTE, PER_HOUR)
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    def wait_turn(self, key: str, time_left: float) -> float:
        """Sleep until this write's turn under ``key`` in every rate; the seconds slept.
        GitHubRateLimitError, before sleeping, when the turn comes after ``time_left``."""
        now = self.clock()
        wait = 0.0
        for n, rate in enumerate(self.rates):
            slot = self.slots.claim(f"{key}#{n}", now, rate.interval_s)
            wait = max(wait, slot - (rate.burst - 1) * rate.interval_s - now)
        if wait > time_left:
            raise GitHubRateLimitError(
                f"GitHub writes paced: the next turn is in {wait:.1f} s, "
                f"after the {time_left:.1f} s left"
            )
        if wait > 0:
            self.sleep(wait)
        return wait

    def turn_now(self, key: str) -> bool:
        """Take this write's turn under ``key`` if it is now in every rate; False when one
        rate would make it wait (a rate checked before it may have given up a slot, which
        only makes the pace slower, never faster than its rates)."""
        now = self.clock()
        return all(
            self.slots.claim_by(
                f"{key}#{n}", now, rate.interval_s, now + (rate.burst - 1) * rate.interval_s
            )
            for n, rate in enumerate(self.rates)
        )


def throttle_wait(status: int, headers: Mapping[str, str], now: float) -> float | None:
    """The seconds a throttled answer asks to wait before the request is made again: a
    403 or 429 with ``retry-after`` (GitHub's secondary limit), or with
    ``x-ratelimit-remaining`` 0 until ``x-ratelimit-reset`` (the primary limit); a 429 with
    neither, a minute. None: not throttled (a 403 without them is a refusal)."""
    if status not in THROTTLED:
        return None
    retry_after = _number(headers.get("retry-after"))
    if retry_after is not None:
        return max(0.0, retry_after)
    if headers.get("x-ratelimit-remaining") == "0":
        reset = _number(headers.get("x-ratelimit-reset"))
        if reset is not None:
            return max(0.0, reset - now)
    return SECONDARY_WAIT_S if status == 429 else None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


@dataclass
class ConditionalReads:
    """The last answer and ETag of each GET that repeats (a compare, a commit), per
    container: the next GET sends ``If-None-Match``, and GitHub's 304, which its primary
    limit does not count, reuses the answer kept."""

    capacity: int = 256
    _kept: dict[str, tuple[str, object]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def etag(self, url: str) -> str | None:
        with self._lock:
            kept = self._kept.get(url)
            return kept[0] if kept is not None else None

    def answer(self, url: str) -> object:
        with self._lock:
            return self._kept[url][1]

    def keep(self, url: str, etag: str, answer: object) -> None:
        with self._lock:
            self._kept.pop(url, None)
            self._kept[url] = (etag, answer)
            while len(self._kept) > self.capacity:
                del self._kept[next(iter(self._kept))]
