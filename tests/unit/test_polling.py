"""A node's polls of the run folder: quick at first, then one per ``poll_s``."""

from __future__ import annotations

from itertools import islice

from distkpi_cli.node.polling import pauses


def test_the_pauses_double_from_a_twentieth_of_a_second_up_to_the_poll_interval() -> None:
    assert list(islice(pauses(1.0), 7)) == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert list(islice(pauses(0.01), 3)) == [0.01, 0.01, 0.01]  # never longer than asked


def test_a_ten_minute_wait_at_a_two_second_interval_polls_about_300_times() -> None:
    waited, polls = 0.0, 0
    for pause in pauses(2.0):
        if waited >= 600:
            break
        waited, polls = waited + pause, polls + 1
    assert 300 <= polls <= 306
