"""boto3 clients made one way: standard retries, endpoint from AWS_ENDPOINT_URL if set."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CLIENT_CONFIG = Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=5)


def client(service: str) -> Any:
    return boto3.client(service, config=CLIENT_CONFIG)  # type: ignore[call-overload]


def load_models(*services: str) -> None:
    """Make and drop a client of each service: boto3's default session keeps their models
    and the endpoint rules loaded, so the clients a first request makes skip parsing them.
    No request is sent (the region only names an endpoint nobody calls)."""
    for service in services:
        boto3.client(service, region_name="us-east-1")  # type: ignore[call-overload]


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
