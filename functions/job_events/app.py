"""EventBridge Batch Job State Change (FAILED, SUCCEEDED): settle a config its nodes left."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from distkpi.entry.job_events import handle_event
from distkpi.entry.observability import log_metrics, logger
from distkpi.entry.tracing import tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return {"settled_config": handle_event(event)}
