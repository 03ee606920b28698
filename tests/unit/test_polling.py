"""The node's one poll-until (node/polling.py), on a clock the test moves."""

from __future__ import annotations

from distkpi_cli.node.polling import poll_until


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_it_answers_as_soon_as_the_attempt_does_pausing_longer_each_time() -> None:
    clock, tries = Clock(), iter([None, None, None, "here"])
    assert poll_until(lambda: next(tries), 60, 0.15, clock=clock, sleep=clock.sleep) == "here"
    assert clock.slept == [0.05, 0.1, 0.15]


def test_none_at_the_deadline_after_one_last_try() -> None:
    clock, tried = Clock(), []

    def attempt() -> str | None:
        tried.append(clock.now)
        return None

    assert poll_until(attempt, 1, 0.5, clock=clock, sleep=clock.sleep) is None
    assert tried[-1] >= 1 and clock.slept == [0.05, 0.1, 0.2, 0.4, 0.5]
