"""GitHub webhook (Lambda Function URL): verify, decide, start the runs."""

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from distkpi.adapters.aws import load_models
from distkpi.entry.observability import log_metrics, logger
from distkpi.entry.webhook import app

# in the container's init (at full CPU, before any delivery waits): the models of the APIs
# every delivery calls (its secret, its claim, its message)
load_models("secretsmanager", "dynamodb", "sqs")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.LAMBDA_FUNCTION_URL)
@log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
