"""The one DynamoDB table, as the repositories use it: conditional writes, paged Queries
with key conditions, GetItem. Every access is one of these; there is no Scan."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from distkpi.adapters.aws import error_code
from distkpi.exceptions import StorageError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

CONDITION_FAILED = "ConditionalCheckFailedException"


def to_dynamo(value: Any) -> Any:
    """Floats become Decimals (DynamoDB has no float type)."""
    return json.loads(json.dumps(value), parse_float=Decimal)


def from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return (
            int(value)
            if value == value.to_integral_value() and "." not in str(value)
            else float(value)
        )
    if isinstance(value, dict):
        return {k: from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [from_dynamo(v) for v in value]
    if isinstance(value, set):
        return {from_dynamo(v) for v in value}
    return value


class DynamoTable:
    def __init__(
        self, table_name: str, table: Table | None = None, page_size: int | None = None
    ) -> None:
        self.table_name = table_name
        self._table = table
        self.page_size = page_size
        self._per_thread = threading.local()

    @property
    def table(self) -> Table:
        """The injected table, else one per thread: boto3 resources are not thread-safe (their
        expression builder numbers placeholders in shared state), clients are."""
        if self._table is not None:
            return self._table
        table: Table | None = getattr(self._per_thread, "table", None)
        if table is None:
            import boto3

            from distkpi.adapters.aws import CLIENT_CONFIG

            resource = boto3.resource("dynamodb", config=CLIENT_CONFIG)
            table = resource.Table(self.table_name)
            self._per_thread.table = table
        return table

    def conditional(self, **request: Any) -> dict[str, Any] | None:
        """An UpdateItem/PutItem; None when its condition failed (someone got there first)."""
        method = self.table.update_item if "UpdateExpression" in request else self.table.put_item
        try:
            return cast("dict[str, Any]", method(**request))
        except ClientError as exc:
            if error_code(exc) == CONDITION_FAILED:
                return None
            raise StorageError(f"DynamoDB refused a write: {exc}") from exc

    def put(self, item: dict[str, Any]) -> None:
        self._write(self.table.put_item, Item=to_dynamo(item))

    def update(self, **request: Any) -> None:
        self._write(self.table.update_item, **request)

    def delete(self, key: dict[str, str]) -> None:
        self._write(self.table.delete_item, Key=key)

    def put_all(self, items: Iterable[dict[str, Any]]) -> None:
        try:
            with self.table.batch_writer() as batch:
                for item in items:
                    batch.put_item(Item=to_dynamo(item))
        except ClientError as exc:
            raise StorageError(f"DynamoDB refused a batch write: {exc}") from exc

    def _write(self, method: Any, **request: Any) -> None:
        try:
            method(**request)
        except ClientError as exc:
            raise StorageError(f"DynamoDB refused a write: {exc}") from exc

    def get(self, key: dict[str, str], consistent: bool = False) -> dict[str, Any] | None:
        try:
            item = self.table.get_item(Key=key, ConsistentRead=consistent).get("Item")
        except ClientError as exc:
            raise StorageError(f"DynamoDB read failed: {exc}") from exc
        return from_dynamo(item) if item is not None else None

    def query(self, **request: Any) -> Iterator[dict[str, Any]]:
        if self.page_size:
            request["Limit"] = self.page_size
        try:
            while True:
                page = self.table.query(**request)
                for item in page.get("Items", []):
                    yield from_dynamo(item)
                if "LastEvaluatedKey" not in page:
                    return
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except ClientError as exc:
            raise StorageError(f"DynamoDB query failed: {exc}") from exc
