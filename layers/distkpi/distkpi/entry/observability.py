"""Powertools Logger, Metrics and Tracer shared by the handlers."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = "distkpi"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)
tracer = Tracer(service=SERVICE)


def count(name: str, value: int = 1) -> None:
    if value:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
