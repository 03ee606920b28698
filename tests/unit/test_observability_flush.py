"""A handler invocation that counted nothing (a schedule with no scheduled suite, a queue
batch of duplicates) flushes no metrics and says nothing on stderr: Powertools would warn
"No application metrics to publish" on every such invocation."""

from __future__ import annotations

import warnings
from typing import Any

from distkpi.entry.observability import count, log_metrics


@log_metrics
def _quiet(event: Any, context: Any) -> str:
    return "done"


@log_metrics
def _counting(event: Any, context: Any) -> str:
    count("ScheduledRuns", 2)
    return "done"


def test_an_invocation_that_counted_nothing_warns_nothing(capsys: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _quiet({}, None) == "done"
    assert [str(w.message) for w in caught] == []
    assert capsys.readouterr().out == ""


def test_an_invocation_that_counted_flushes_its_metric(capsys: Any) -> None:
    assert _counting({}, None) == "done"
    assert '"ScheduledRuns"' in capsys.readouterr().out
