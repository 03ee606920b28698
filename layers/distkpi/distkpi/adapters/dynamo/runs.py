"""Runs and their configs. The fan-in is exactly-once through conditions on their state,
never through locks in memory."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable, from_dynamo, to_dynamo
from distkpi.domain.contracts import RunSpec
from distkpi.domain.github.acceptance import Acceptance
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.records import ConfigRecord, ConfigState, RunRecord, RunStatus
from distkpi.exceptions import NotFoundError

if TYPE_CHECKING:
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.kpis.engine import ConfigKpis

TRIGGER_FIELDS = tuple(f.name for f in fields(Trigger))
SUITE_CHECK_KEPT_S = 90 * 24 * 3600
DAY_S = 24 * 3600


def trigger_of(item: Mapping[str, Any]) -> Trigger:
    """A run item's trigger (an item from before labels were kept has none)."""
    values = {name: item.get(name) for name in TRIGGER_FIELDS}
    values["labels"] = tuple(str(label) for label in item.get("labels") or ())
    return Trigger(**values)  # type: ignore[arg-type]


def run_item(run: RunRecord) -> dict[str, Any]:
    return {
        **keys.run(run.run_id),
        **asdict(run.trigger),
        "run_id": run.run_id,
        "model": run.model,
        "spec": run.spec.to_json(),
        "delivery": run.delivery,
        "verdict_settings": run.verdict_settings.model_dump(mode="json"),
        "created_at": run.created_at,
        "configs_total": run.configs_total,
        "status": run.status.value,
        "attempt": run.attempt,
        **({"confirms": run.confirms} if run.confirms else {}),
        **({"extra_time_s": run.extra_time_s} if run.extra_time_s else {}),
        **({"bisection": run.bisection} if run.bisection else {}),
        **({"started_at": run.started_at} if run.started_at else {}),
        "GSI1PK": keys.commit(run.trigger.repo, run.trigger.sha),
        "GSI1SK": keys.ordered(run.created_at, run.run_id),
        # the sweeper's deadline query: queued by creation, then started by when the run
        # timeout counts from
        "GSI2PK": keys.RUNNING,
        "GSI2SK": _deadline_order(run),
    }


def _deadline_order(run: RunRecord) -> str:
    if run.started_at is None:
        return keys.ordered(run.created_at, run.run_id)
    return keys.started(run.timeout_counted_from, run.run_id)


def run_record(item: Mapping[str, Any]) -> RunRecord:
    result = item.get("result")
    evaluation = None
    if result:
        # only a finished run has one: the KPI engine stays off the webhook's imports
        from distkpi.domain.judging.evaluation import Evaluation

        evaluation = Evaluation.from_json(result)
    return RunRecord(
        run_id=str(item["run_id"]),
        trigger=trigger_of(item),
        model=str(item["model"]),
        spec=RunSpec.model_validate(item["spec"]),
        delivery=str(item.get("delivery", "")),
        verdict_settings=VerdictSettings.model_validate(item.get("verdict_settings") or {}),
        created_at=str(item["created_at"]),
        configs_total=int(item["configs_total"]),
        status=RunStatus(item["status"]),
        configs_done=frozenset(item.get("configs_done", ())),
        evaluation=evaluation,
        finished_at=item.get("finished_at"),
        published_at=item.get("published_at"),
        cancelled_reason=item.get("cancelled_reason"),
        attempt=int(item.get("attempt", 1)),
        confirms=item.get("confirms"),
        confirmed_by=item.get("confirmed_by"),
        extra_time_s=int(item.get("extra_time_s", 0)),
        bisection=item.get("bisection"),
        accepted=Acceptance.from_json(item["accepted"]) if item.get("accepted") else None,
        started_at=item.get("started_at"),
    )


def config_record(item: Mapping[str, Any]) -> ConfigRecord:
    kpis = None
    if item.get("kpis"):
        from distkpi.domain.kpis.engine import ConfigKpis  # only settled configs have KPIs

        kpis = ConfigKpis.from_record(item["kpis"])
    return ConfigRecord(
        run_id=keys.run_id_of(str(item["PK"])),
        name=str(item["name"]),
        nodes_expected=int(item["nodes_expected"]),
        state=ConfigState(item["state"]),
        nodes_reported=frozenset(int(n) for n in item.get("nodes_reported", ())),
        kpis=kpis,
        job_id=item.get("job_id"),
        looks={
            int(name.removeprefix(LOOK)): from_dynamo(value)
            for name, value in item.items()
            if name.startswith(LOOK) and name.removeprefix(LOOK).isdigit()
        },
        look_arrivals={
            int(name.removeprefix(ARRIVED)): frozenset(int(n) for n in value)
            for name, value in item.items()
            if name.startswith(ARRIVED) and name.removeprefix(ARRIVED).isdigit()
        },
    )


LOOK = "look_"  # a paired config's decision after pair p is its attribute look_<p>
ARRIVED = "arrived_"  # the nodes whose look manifest of pair p arrived: a number set


class RunRepository:
    def __init__(self, table: DynamoTable, retention_days: int | None = None) -> None:
        self.table = table
        # a run's items go (TTL) this many days after it was created; None: never
        self.retention_days = retention_days

    def _expiry(self, created_at: str) -> dict[str, int]:
        if self.retention_days is None:
            return {}
        created = datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp()
        return {"expires_at": int(created) + self.retention_days * DAY_S}

    def create(self, run: RunRecord, configs: Mapping[str, int]) -> bool:
        """The run and one pending config per (name -> nodes); False if the run exists.
        No key is stored: each config's is derived (domain/signing.config_key)."""
        expiry = self._expiry(run.created_at)
        created = self.table.conditional(
            Item=to_dynamo({**run_item(run), **expiry}),
            ConditionExpression="attribute_not_exists(PK)",
        )
        if created is None:
            return False
        for name, nodes in configs.items():
            config = {
                **keys.config(run.run_id, name),
                "name": name,
                "nodes_expected": nodes,
                "state": ConfigState.PENDING.value,
                **expiry,
            }
            self.table.conditional(Item=config, ConditionExpression="attribute_not_exists(PK)")
        return True

    def get(self, run_id: str) -> RunRecord | None:
        item = self.table.get(keys.run(run_id), consistent=True)
        return run_record(item) if item is not None else None

    def configs(self, run_id: str) -> list[ConfigRecord]:
        partition, prefix = keys.configs_of(run_id)
        found = self.table.query(
            KeyConditionExpression=Key("PK").eq(partition) & Key("SK").begins_with(prefix),
            ConsistentRead=True,
        )
        return [config_record(item) for item in found]

    def config(self, run_id: str, name: str) -> ConfigRecord | None:
        item = self.table.get(keys.config(run_id, name), consistent=True)
        return config_record(item) if item is not None else None

    def set_job(self, run_id: str, config: str, job_id: str) -> None:
        self.table.update(
            Key=keys.config(run_id, config),
            UpdateExpression="SET job_id = :job",
            ExpressionAttributeValues={":job": job_id},
        )

    def _add_member(
        self, key: dict[str, str], attribute: str, member: object, below: tuple[str, int] | None
    ) -> dict[str, Any]:
        """Add ``member`` to the item's set ``attribute`` (idempotent); the item after it, or
        NotFoundError when there is no such item, or ``below`` = (attribute, value) and the
        item's attribute is not above that value."""
        condition = "attribute_exists(PK)"
        values: dict[str, Any] = {":member": {member}}
        if below is not None:
            condition += f" AND {below[0]} > :bound"
            values[":bound"] = below[1]
        response = self.table.conditional(
            Key=key,
            UpdateExpression=f"ADD {attribute} :member",
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        if response is None:
            raise NotFoundError(f"no item {key['PK']} {key['SK']}")
        return dict(response["Attributes"])

    def add_node(self, run_id: str, config: str, node: int) -> ConfigRecord:
        """Record that a node reported (idempotent); the config after it. NotFoundError for
        a config that does not exist or has no such node."""
        key = keys.config(run_id, config)
        item = self._add_member(key, "nodes_reported", node, below=("nodes_expected", node))
        return config_record(item)

    def settle_config(self, run_id: str, kpis: ConfigKpis) -> bool:
        """Store a config's KPIs once: True for the caller that settled it."""
        response = self.table.conditional(
            Key=keys.config(run_id, kpis.name),
            UpdateExpression="SET #state = :state, kpis = :kpis",
            ConditionExpression="#state = :pending",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={
                ":state": ConfigState.settled_as(kpis.status).value,
                ":kpis": to_dynamo(kpis.to_record()),
                ":pending": ConfigState.PENDING.value,
            },
        )
        return response is not None

    def record_look(
        self, run_id: str, config: str, pair: int, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """A paired config's decision after ``pair``, stored once: the one stored first,
        whoever stored it (each node's look manifest may make a decision)."""
        attribute = f"{LOOK}{pair}"
        stored = self.table.conditional(
            Key=keys.config(run_id, config),
            UpdateExpression="SET #look = :decision",
            ConditionExpression="attribute_exists(PK) AND attribute_not_exists(#look)",
            ExpressionAttributeNames={"#look": attribute},
            ExpressionAttributeValues={":decision": to_dynamo(dict(decision))},
        )
        if stored is not None:
            return decision
        record = self.config(run_id, config)
        if record is None or pair not in record.looks:
            raise NotFoundError(f"no config {config} of run {run_id}")
        return record.looks[pair]

    def add_look_arrival(self, run_id: str, config: str, pair: int, node: int) -> ConfigRecord:
        """Record that a node's look manifest of ``pair`` arrived (an atomic, idempotent
        ADD: a redelivered event counts once); the config after it. NotFoundError for a
        config that does not exist or has no such node."""
        key = keys.config(run_id, config)
        item = self._add_member(key, f"{ARRIVED}{pair}", node, below=("nodes_expected", node))
        return config_record(item)

    def add_config_done(self, run_id: str, config: str) -> tuple[int, int]:
        """Record that a config settled (idempotent); (configs done, configs in the run)."""
        item = self._add_member(keys.run(run_id), "configs_done", config, below=None)
        return len(item.get("configs_done", ())), int(item["configs_total"])

    def finish(self, run_id: str, evaluation: Evaluation, finished_at: str) -> bool:
        """Store the run's evaluation once: True for the caller that did."""
        response = self.table.conditional(
            Key=keys.run(run_id),
            UpdateExpression="SET #status = :done, #result = :result, finished_at = :at, "
            "GSI2PK = :unpublished, GSI2SK = :order",
            ConditionExpression="#status = :running",
            ExpressionAttributeNames={"#status": "status", "#result": "result"},
            ExpressionAttributeValues={
                ":done": RunStatus.DONE.value,
                ":result": to_dynamo(evaluation.to_json()),
                ":at": finished_at,
                ":running": RunStatus.RUNNING.value,
                ":unpublished": keys.UNPUBLISHED,
                ":order": keys.ordered(finished_at, run_id),
            },
        )
        return response is not None

    def hand_over(self, run_id: str, evaluation: Evaluation, confirmed_by: str) -> bool:
        """Store the run's evaluation so far and leave its verdict to the confirmation run
        ``confirmed_by``, once: True for the caller that did. It is then in no index: not
        running (no deadline of its own) and never published (the last run of it is)."""
        response = self.table.conditional(
            Key=keys.run(run_id),
            UpdateExpression="SET #status = :confirming, #result = :result, "
            "confirmed_by = :next REMOVE GSI2PK, GSI2SK",
            ConditionExpression="#status = :running",
            ExpressionAttributeNames={"#status": "status", "#result": "result"},
            ExpressionAttributeValues={
                ":confirming": RunStatus.CONFIRMING.value,
                ":result": to_dynamo(evaluation.to_json()),
                ":next": confirmed_by,
                ":running": RunStatus.RUNNING.value,
            },
        )
        return response is not None

    def cancel(self, run_id: str, reason: str, at: str) -> bool:
        """Stop a running (or confirming) run from ever finishing (its late results publish
        nothing): True for the caller that cancelled it."""
        response = self.table.conditional(
            Key=keys.run(run_id),
            UpdateExpression="SET #status = :cancelled, cancelled_reason = :reason, "
            "finished_at = :at REMOVE GSI2PK, GSI2SK",
            ConditionExpression="#status IN (:running, :confirming)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":cancelled": RunStatus.CANCELLED.value,
                ":reason": reason,
                ":at": at,
                ":running": RunStatus.RUNNING.value,
                ":confirming": RunStatus.CONFIRMING.value,
            },
        )
        return response is not None

    def suite_check_run(self, repo: str, external_id: str) -> int | None:
        """The id of a suite's check run with no run (its external id: suite@sha)."""
        item = self.table.get(keys.suite_check(repo, external_id))
        found = item.get("check_run") if item is not None else None
        return int(found) if found is not None else None

    def set_suite_check_run(self, repo: str, external_id: str, check_run: int) -> None:
        """Kept as long as a commit's check runs matter to anyone (TTL)."""
        at = int(time.time()) + SUITE_CHECK_KEPT_S
        key = keys.suite_check(repo, external_id)
        self.table.put({**key, "check_run": check_run, "expires_at": at})

    def check_run(self, run_id: str) -> int | None:
        """The run's check run id, kept when it was created; None before that (or for a run
        item written before ids were kept)."""
        item = self.table.get(keys.run(run_id), consistent=True)
        found = item.get("check_run") if item is not None else None
        return int(found) if found is not None else None

    def set_check_run(self, run_id: str, check_run: int) -> bool:
        """Keep the run's check run id on its item; False when there is no such run."""
        response = self.table.conditional(
            Key=keys.run(run_id),
            UpdateExpression="SET check_run = :id",
            ConditionExpression="attribute_exists(PK)",
            ExpressionAttributeValues={":id": check_run},
        )
        return response is not None

    def accept(self, run_id: str, acceptance: Acceptance) -> bool:
        """Keep who accepted the finished run's regressions; False when it is not finished
        or was accepted already (the first acceptance stands)."""
        response = self.table.conditional(
            Key=keys.run(run_id),
            UpdateExpression="SET accepted = :accepted",
            ConditionExpression="#status = :done AND attribute_not_exists(accepted)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":accepted": to_dynamo(acceptance.to_json()),
                ":done": RunStatus.DONE.value,
            },
        )
        return response is not None

    def claim_publication(self, run_id: str, now: int, lease_s: int = 300) -> bool:
        """One publisher of the final status at a time; a stale lease can be taken over."""
        response = self.table.conditional(
            Key=keys.run(run_id),
            UpdateExpression="SET publish_lease = :until",
            ConditionExpression="#status = :done AND attribute_not_exists(published_at) "
            "AND (attribute_not_exists(publish_lease) OR publish_lease < :now)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":until": now + lease_s,
                ":now": now,
                ":done": RunStatus.DONE.value,
            },
        )
        return response is not None

    def mark_published(self, run_id: str, now: int) -> None:
        self.table.update(
            Key=keys.run(run_id),
            UpdateExpression="SET published_at = :now REMOVE publish_lease, GSI2PK, GSI2SK",
            ExpressionAttributeValues={":now": now},
        )

    def release_publication(self, run_id: str) -> None:
        self.table.update(Key=keys.run(run_id), UpdateExpression="REMOVE publish_lease")

    def _index(self, partition: str, before: str | None = None) -> list[str]:
        condition: Any = Key("GSI2PK").eq(partition)
        if before is not None:
            condition = condition & Key("GSI2SK").lt(before)
        found = self.table.query(IndexName="GSI2", KeyConditionExpression=condition)
        return [keys.run_id_of(str(item["PK"])) for item in found]

    def unpublished(self) -> list[str]:
        """Finished runs whose final status has not gone out yet (GitHub was down), oldest
        first: a sparse index, so only those runs are in it."""
        return self._index(keys.UNPUBLISHED)

    def running_since_before(self, created_before: str) -> list[str]:
        """Runs still running none of whose jobs has started, made before the given ISO
        time, oldest first (`started#` keys sort after every time)."""
        return self._index(keys.RUNNING, before=created_before)

    def started_before(self, counted_from_before: str) -> list[str]:
        """Runs still running whose run timeout counts (`RunRecord.timeout_counted_from`:
        the first job's start, later by a paired run's extra time) from before the given
        ISO time, earliest first."""
        condition = Key("GSI2PK").eq(keys.RUNNING) & Key("GSI2SK").between(
            keys.STARTED, keys.started(counted_from_before, "")
        )
        found = self.table.query(IndexName="GSI2", KeyConditionExpression=condition)
        return [keys.run_id_of(str(item["PK"])) for item in found]

    def mark_jobs_started(self, run: RunRecord, at: str) -> bool:
        """The run's first job started at ``at``: its run timeout now counts from there. True
        for the one caller that marked it (a run still running, not marked before)."""
        started = replace(run, started_at=at)
        response = self.table.conditional(
            Key=keys.run(run.run_id),
            UpdateExpression="SET started_at = :at, GSI2SK = :deadline",
            ConditionExpression="#status = :running AND attribute_not_exists(started_at)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":at": at,
                ":deadline": _deadline_order(started),
                ":running": RunStatus.RUNNING.value,
            },
        )
        return response is not None

    def of_commit(self, repo: str, sha: str) -> list[RunRecord]:
        found = self.table.query(
            IndexName="GSI1", KeyConditionExpression=Key("GSI1PK").eq(keys.commit(repo, sha))
        )
        return [run_record(item) for item in found]
