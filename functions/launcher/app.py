"""SQS (the delivery queue): start each queued GitHub delivery's runs at the pace Batch takes."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from distkpi.entry.launcher import handle_messages
from distkpi.entry.observability import log_metrics, logger
from distkpi.entry.tracing import tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_messages(event, context)
