"""Secrets Manager values, cached per Lambda container."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, cast

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client
from distkpi.exceptions import StorageError

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient


class SecretReader:
    def __init__(self, sm: SecretsManagerClient | None = None, ttl_s: float = 300.0) -> None:
        self._sm = sm
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, str]] = {}

    def get(self, secret_id: str) -> str:
        cached = self._cache.get(secret_id)
        if cached and time.monotonic() - cached[0] < self.ttl_s:
            return cached[1]
        if self._sm is None:
            self._sm = cast("SecretsManagerClient", client("secretsmanager"))
        try:
            value = self._sm.get_secret_value(SecretId=secret_id)["SecretString"]
        except (ClientError, KeyError) as exc:
            raise StorageError(f"cannot read secret {secret_id}") from exc
        self._cache[secret_id] = (time.monotonic(), value)
        return value
