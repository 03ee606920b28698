"""A token bucket: calls to a service with an account-wide rate limit (Batch's SubmitJob,
50 a second, not raisable) spread so that an invocation never asks for more than its share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TokenBucket:
    """``rate`` calls a second on average, at most ``burst`` at once; ``take`` waits for a
    token. One per container: concurrent invocations each hold their own, so the account's
    rate is the function's reserved concurrency times ``rate`` (docs/explanation/scale.md)."""

    rate: float
    burst: float = 1.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _tokens: float = field(init=False)
    _at: float = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, not {self}")
        self._tokens, self._at = self.burst, self.clock()

    def take(self) -> float:
        """One token, waiting as long as it takes; the seconds waited."""
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            self._tokens -= 1
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self.sleep(wait)
        return wait
