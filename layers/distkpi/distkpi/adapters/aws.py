"""boto3 clients made one way: standard retries, endpoint from AWS_ENDPOINT_URL if set."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CLIENT_CONFIG = Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=5)


def client(service: str) -> Any:
    return boto3.client(service, config=CLIENT_CONFIG)  # type: ignore[call-overload]


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
