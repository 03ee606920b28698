"""Powertools Logger and Metrics shared by the handlers (the Tracer is in tracing.py).

The X-Ray SDK behind the Tracer costs ~300 ms of cold start on its own, so the webhook,
whose latency GitHub waits on, relies on Lambda's own active tracing instead.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = "distkpi"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)


def count(name: str, value: int = 1) -> None:
    if value:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
