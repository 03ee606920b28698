"""EventBridge schedule: settle runs past their deadline as `error`, and post the final
statuses that GitHub missed when runs ended."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from distkpi.entry.observability import log_metrics, logger
from distkpi.entry.sweeper import handle_schedule
from distkpi.entry.tracing import tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return handle_schedule(lambda: context.get_remaining_time_in_millis() / 1000)
