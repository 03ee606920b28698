"""Fixtures the node runner's tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.conftest import offline_aws

BUCKET = "runs-bucket"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's S3 in-process, with the bucket the nodes upload to."""
    offline_aws(monkeypatch)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield client
