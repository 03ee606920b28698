"""The one DynamoDB table: runs, their configs, job and delivery bookkeeping, KPI history.

Keys (PK / SK):
  RUN#<run_id>                 / RUN               the run
                               (GSI1: COMMIT#<repo>#<sha> / <created>#<run_id>)
  RUN#<run_id>                 / CONFIG#<name>     a config: nodes reported, state, KPIs
  JOB#<job_id>                 / JOB               which run and config a Batch job serves
  DELIVERY#<id>                / DELIVERY          a webhook delivery seen (expires via TTL)
  PR#<repo>#<number>           / <created>#<run_id>  a run of a pull request (expires via TTL)
  HIST#<repo>#<branch>#<model> / <created>#<run>#<config>   one config's KPIs of a finished run
  RESET#<repo>#<branch>#<model> / <at>#<config>            an audited baseline reset
A running run carries GSI2: RUNNING / <created>#<run_id>, so that runs past their deadline
are found by a Query; when it finishes that becomes UNPUBLISHED / <finished>#<run_id>,
removed once its final status is out.

Every access is a GetItem, a conditional write or a Query with key conditions. Fan-in
is exactly-once through conditions on ``state``, never through locks in memory.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from distkpi.adapters.aws import error_code
from distkpi.exceptions import NotFoundError, StorageError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

CONDITION_FAILED = "ConditionalCheckFailedException"
UNPUBLISHED = "UNPUBLISHED"
RUNNING = "RUNNING"
PR_TTL_S = 90 * 24 * 3600


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


def history_key(repo: str, branch: str, model: str) -> str:
    return f"HIST#{repo}#{branch}#{model}"


def pull_request_key(repo: str, number: int) -> str:
    return f"PR#{repo}#{number}"


def reset_key(repo: str, branch: str, model: str) -> str:
    return f"RESET#{repo}#{branch}#{model}"


class RunRepository:
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

    # -- writes guarded by conditions -------------------------------------------------

    def _conditional(self, **request: Any) -> dict[str, Any] | None:
        """An UpdateItem/PutItem; None when its condition failed (someone got there first)."""
        method = self.table.update_item if "UpdateExpression" in request else self.table.put_item
        try:
            return cast("dict[str, Any]", method(**request))
        except ClientError as exc:
            if error_code(exc) == CONDITION_FAILED:
                return None
            raise StorageError(f"DynamoDB refused a write: {exc}") from exc

    def claim_delivery(self, delivery: str, now: int, ttl_s: int = 7 * 24 * 3600) -> bool:
        item = {
            "PK": f"DELIVERY#{delivery}",
            "SK": "DELIVERY",
            "seen_at": now,
            "expires_at": now + ttl_s,
        }
        return (
            self._conditional(Item=item, ConditionExpression="attribute_not_exists(PK)") is not None
        )

    def release_delivery(self, delivery: str) -> None:
        self._write(self.table.delete_item, Key={"PK": f"DELIVERY#{delivery}", "SK": "DELIVERY"})

    def create_run(
        self, run: Mapping[str, Any], configs: Mapping[str, int], created_at: str
    ) -> bool:
        """The run item and one pending item per config (name -> nodes); False if it exists."""
        item = {
            **to_dynamo(dict(run)),
            "PK": f"RUN#{run['run_id']}",
            "SK": "RUN",
            "GSI1PK": f"COMMIT#{run['repo']}#{run['sha']}",
            "GSI1SK": f"{created_at}#{run['run_id']}",
            "GSI2PK": RUNNING,
            "GSI2SK": f"{created_at}#{run['run_id']}",
            "status": "running",
            "created_at": created_at,
            "configs_total": len(configs),
        }
        if self._conditional(Item=item, ConditionExpression="attribute_not_exists(PK)") is None:
            return False
        if run.get("pull_request") is not None:
            self._write(
                self.table.put_item,
                Item={
                    "PK": pull_request_key(str(run["repo"]), int(run["pull_request"])),
                    "SK": item["GSI1SK"],
                    "run_id": run["run_id"],
                    "sha": run["sha"],
                    "model": run["model"],
                    "updated_at": run.get("updated_at") or "",
                    "expires_at": int(datetime.fromisoformat(created_at).timestamp()) + PR_TTL_S,
                },
            )
        for name, nodes in configs.items():
            config = {
                "PK": item["PK"],
                "SK": f"CONFIG#{name}",
                "name": name,
                "nodes_expected": nodes,
                "state": "pending",
            }
            self._conditional(Item=config, ConditionExpression="attribute_not_exists(PK)")
        return True

    def record_job(self, job_id: str, run_id: str, config: str, request: Mapping[str, Any]) -> None:
        """Which run and config a job serves, and exactly what was submitted."""
        item = {
            "PK": f"JOB#{job_id}",
            "SK": "JOB",
            "run_id": run_id,
            "config": config,
            "request": to_dynamo(dict(request)),
        }
        self._write(self.table.put_item, Item=item)
        self._write(
            self.table.update_item,
            Key={"PK": f"RUN#{run_id}", "SK": f"CONFIG#{config}"},
            UpdateExpression="SET job_id = :job",
            ExpressionAttributeValues={":job": job_id},
        )

    def _add_member(
        self,
        key: dict[str, str],
        attribute: str,
        member: object,
        below: tuple[str, int] | None = None,
    ) -> dict[str, Any]:
        """Add ``member`` to the item's set ``attribute`` (idempotent); the item after it, or
        NotFoundError when there is no such item, or ``below`` = (attribute, value) and the
        item's attribute is not above that value."""
        condition = "attribute_exists(PK)"
        values: dict[str, Any] = {":member": {member}}
        if below is not None:
            condition += f" AND {below[0]} > :bound"
            values[":bound"] = below[1]
        response = self._conditional(
            Key=key,
            UpdateExpression=f"ADD {attribute} :member",
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        if response is None:
            raise NotFoundError(f"no item {key['PK']} {key['SK']}")
        return cast("dict[str, Any]", response["Attributes"])

    def add_node(self, run_id: str, config: str, node: int) -> tuple[int, int, str]:
        """Record that a node reported (idempotent); (nodes reported, nodes expected, state).
        NotFoundError for a config that does not exist or has no such node."""
        key = {"PK": f"RUN#{run_id}", "SK": f"CONFIG#{config}"}
        item = self._add_member(key, "nodes_reported", node, below=("nodes_expected", node))
        return len(item.get("nodes_reported", ())), int(item["nodes_expected"]), str(item["state"])

    def settle_config(self, run_id: str, config: str, kpis: Mapping[str, Any], state: str) -> bool:
        """Store a config's KPIs once: True for the caller that settled it."""
        response = self._conditional(
            Key={"PK": f"RUN#{run_id}", "SK": f"CONFIG#{config}"},
            UpdateExpression="SET #state = :state, kpis = :kpis",
            ConditionExpression="#state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={
                ":state": state,
                ":kpis": to_dynamo(dict(kpis)),
                ":pending": "pending",
            },
        )
        return response is not None

    def add_config_done(self, run_id: str, config: str) -> tuple[int, int]:
        """Record that a config settled (idempotent); (configs done, configs in the run)."""
        item = self._add_member({"PK": f"RUN#{run_id}", "SK": "RUN"}, "configs_done", config)
        return len(item.get("configs_done", ())), int(item["configs_total"])

    def finish_run(self, run_id: str, result: Mapping[str, Any], finished_at: str) -> bool:
        """Settle the run once with its KPIs and verdict: True for the caller that did."""
        response = self._conditional(
            Key={"PK": f"RUN#{run_id}", "SK": "RUN"},
            UpdateExpression="SET #status = :done, #result = :result, finished_at = :at, "
            "GSI2PK = :unpublished, GSI2SK = :order",
            ConditionExpression="#status = :running",
            ExpressionAttributeNames={"#status": "status", "#result": "result"},
            ExpressionAttributeValues={
                ":done": "done",
                ":result": to_dynamo(dict(result)),
                ":at": finished_at,
                ":running": "running",
                ":unpublished": UNPUBLISHED,
                ":order": f"{finished_at}#{run_id}",
            },
        )
        return response is not None

    def cancel_run(self, run_id: str, reason: str, at: str) -> bool:
        """Stop a running run from ever finishing (its late results publish nothing): True for
        the caller that cancelled it."""
        response = self._conditional(
            Key={"PK": f"RUN#{run_id}", "SK": "RUN"},
            UpdateExpression="SET #status = :cancelled, cancelled_reason = :reason, "
            "finished_at = :at REMOVE GSI2PK, GSI2SK",
            ConditionExpression="#status = :running",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":cancelled": "cancelled",
                ":reason": reason,
                ":at": at,
                ":running": "running",
            },
        )
        return response is not None

    def claim_publication(self, run_id: str, now: int, lease_s: int = 300) -> bool:
        """One publisher of the final status at a time; a stale lease can be taken over."""
        response = self._conditional(
            Key={"PK": f"RUN#{run_id}", "SK": "RUN"},
            UpdateExpression="SET publish_lease = :until",
            ConditionExpression="#status = :done AND attribute_not_exists(published_at) "
            "AND (attribute_not_exists(publish_lease) OR publish_lease < :now)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":until": now + lease_s, ":now": now, ":done": "done"},
        )
        return response is not None

    def mark_published(self, run_id: str, now: int) -> None:
        self._write(
            self.table.update_item,
            Key={"PK": f"RUN#{run_id}", "SK": "RUN"},
            UpdateExpression="SET published_at = :now REMOVE publish_lease, GSI2PK, GSI2SK",
            ExpressionAttributeValues={":now": now},
        )

    def release_publication(self, run_id: str) -> None:
        self._write(
            self.table.update_item,
            Key={"PK": f"RUN#{run_id}", "SK": "RUN"},
            UpdateExpression="REMOVE publish_lease",
        )

    def put_history(self, items: list[dict[str, Any]]) -> None:
        try:
            with self.table.batch_writer() as batch:
                for item in items:
                    batch.put_item(Item=to_dynamo(item))
        except ClientError as exc:
            raise StorageError(f"cannot write history: {exc}") from exc

    def record_reset(
        self, repo: str, branch: str, model: str, *, config: str, reason: str, who: str, at: str
    ) -> None:
        item = {
            "PK": reset_key(repo, branch, model),
            "SK": f"{at}#{config}",
            "config": config,
            "reason": reason,
            "who": who,
            "at": at,
        }
        self._write(self.table.put_item, Item=item)

    def resets(self, repo: str, branch: str, model: str) -> list[dict[str, Any]]:
        """Audited baseline resets of (repo, branch, model), oldest first."""
        return list(
            self._query(KeyConditionExpression=Key("PK").eq(reset_key(repo, branch, model)))
        )

    def _write(self, method: Any, **request: Any) -> None:
        try:
            method(**request)
        except ClientError as exc:
            raise StorageError(f"DynamoDB refused a write: {exc}") from exc

    # -- reads --------------------------------------------------------------------

    def _query(self, **request: Any) -> Iterator[dict[str, Any]]:
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

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        items = list(
            self._query(KeyConditionExpression=Key("PK").eq(f"RUN#{run_id}") & Key("SK").eq("RUN"))
        )
        return items[0] if items else None

    def configs(self, run_id: str) -> list[dict[str, Any]]:
        return list(
            self._query(
                KeyConditionExpression=Key("PK").eq(f"RUN#{run_id}")
                & Key("SK").begins_with("CONFIG#"),
                ConsistentRead=True,
            )
        )

    def job(self, job_id: str) -> dict[str, Any] | None:
        items = list(
            self._query(KeyConditionExpression=Key("PK").eq(f"JOB#{job_id}") & Key("SK").eq("JOB"))
        )
        return items[0] if items else None

    def job_target(self, job_id: str) -> tuple[str, str] | None:
        """The (run, config) a Batch job serves; None when it is not one of ours."""
        item = self.job(job_id)
        return (item["run_id"], item["config"]) if item else None

    def unpublished_runs(self) -> list[dict[str, Any]]:
        """Finished runs whose final status has not gone out yet (GitHub was down), oldest
        first: a sparse index, so only those runs are in it."""
        return list(
            self._query(IndexName="GSI2", KeyConditionExpression=Key("GSI2PK").eq(UNPUBLISHED))
        )

    def runs_started_before(self, created_before: str) -> list[dict[str, Any]]:
        """Runs still running that were created before the given ISO time, oldest first."""
        return list(
            self._query(
                IndexName="GSI2",
                KeyConditionExpression=Key("GSI2PK").eq(RUNNING) & Key("GSI2SK").lt(created_before),
            )
        )

    def runs_of_pull_request(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Every run started for a pull request (within the TTL), oldest first."""
        return list(
            self._query(KeyConditionExpression=Key("PK").eq(pull_request_key(repo, number)))
        )

    def runs_of_commit(self, repo: str, sha: str) -> list[dict[str, Any]]:
        return list(
            self._query(
                IndexName="GSI1", KeyConditionExpression=Key("GSI1PK").eq(f"COMMIT#{repo}#{sha}")
            )
        )

    def history(
        self, repo: str, branch: str, model: str, since: str | None = None, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """History records of (repo, branch, model), newest first."""
        condition: Any = Key("PK").eq(history_key(repo, branch, model))
        if since:
            condition = condition & Key("SK").gte(since)
        request: dict[str, Any] = {"KeyConditionExpression": condition, "ScanIndexForward": False}
        for count, item in enumerate(self._query(**request)):
            if limit is not None and count >= limit:
                return
            yield item
