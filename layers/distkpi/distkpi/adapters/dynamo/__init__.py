"""The one DynamoDB table, through repositories that speak in records (domain/records.py):
runs and configs, bookkeeping (deliveries, jobs, pull requests), history and resets. Keys
are in keys.py; every access is a GetItem, a conditional write or a Query (table.py)."""

from distkpi.adapters.dynamo.bookkeeping import (
    JobRepository,
    PullRequestRepository,
)
from distkpi.adapters.dynamo.deliveries import DeliveryClaims
from distkpi.adapters.dynamo.history import HistoryRepository
from distkpi.adapters.dynamo.runs import RunRepository
from distkpi.adapters.dynamo.table import DynamoTable, from_dynamo, to_dynamo

__all__ = [
    "DeliveryClaims",
    "DynamoTable",
    "HistoryRepository",
    "JobRepository",
    "PullRequestRepository",
    "RunRepository",
    "from_dynamo",
    "to_dynamo",
]
