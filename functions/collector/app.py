"""S3's Object Created event (through EventBridge) on a node or look manifest: fan nodes in to
configs and configs in to runs."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from distkpi.entry.collector import handle_keys
from distkpi.entry.observability import log_metrics, logger
from distkpi.entry.tracing import tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    return {"handled": handle_keys([event.detail["object"]["key"]])}
