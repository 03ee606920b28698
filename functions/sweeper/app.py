"""EventBridge schedule: post the final statuses that GitHub missed when runs ended, and
hand the runs past their deadline to the overdue-run queue (functions/deadlines settles
them)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from distkpi.entry.observability import log_metrics, logger
from distkpi.entry.sweeper import handle_schedule
from distkpi.entry.tracing import tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    del event, context  # a schedule's event says nothing; each step is a query and messages
    return handle_schedule()
