"""Powertools Logger and Metrics shared by the handlers (the Tracer is in tracing.py).

The X-Ray SDK behind the Tracer costs ~300 ms of cold start on its own, so the webhook,
whose latency GitHub waits on, relies on Lambda's own active tracing instead.

Lambda runs one invocation per container at a time; the local stack and the tests run
handlers from several threads of one process, so adding and flushing metrics share a lock.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = "distkpi"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)
_metrics_lock = threading.Lock()

Handler = TypeVar("Handler", bound=Callable[..., Any])


def count(name: str, value: int = 1) -> None:
    if value:
        with _metrics_lock:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def log_metrics(handler: Handler) -> Handler:
    """Like Powertools' ``metrics.log_metrics``: flush the invocation's metrics as EMF. An
    invocation that counted nothing (a schedule with no scheduled suite) flushes nothing,
    without Powertools' warning on stderr."""

    @functools.wraps(handler)
    def wrapper(event: Any, context: Any) -> Any:
        try:
            return handler(event, context)
        finally:
            with _metrics_lock:
                if metrics.metric_set:  # else Powertools only warns of nothing to publish
                    metrics.flush_metrics()

    return wrapper  # type: ignore[return-value]
