"""Bisections per (repo, branch, model), by key: each one item, written whole under a
condition on the revision read, so two finishers of one step cannot both move it on."""

from __future__ import annotations

from dataclasses import replace

from boto3.dynamodb.conditions import Key

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable, to_dynamo
from distkpi.domain.bisect.plan import Bisection


class BisectionRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def get(self, repo: str, branch: str, model: str, bad_run_id: str) -> Bisection | None:
        item = self.table.get(keys.bisection(repo, branch, model, bad_run_id), consistent=True)
        return None if item is None else _record(item)

    def of_branch(self, repo: str, branch: str, model: str) -> list[Bisection]:
        """The branch's bisections of the model, oldest first."""
        found = self.table.query(
            KeyConditionExpression=Key("PK").eq(keys.bisections(repo, branch, model))
        )
        return sorted((_record(i) for i in found), key=lambda b: (b.created_at, b.bad_run_id))

    def create(self, bisection: Bisection) -> bool:
        """False when the bad run's bisection exists already."""
        return (
            self.table.conditional(
                Item=to_dynamo(_item(bisection)),
                ConditionExpression="attribute_not_exists(PK)",
            )
            is not None
        )

    def save(self, bisection: Bisection) -> bool:
        """Store it as the next revision of the one read; False when another writer stored
        one since."""
        stored = replace(bisection, revision=bisection.revision + 1)
        return (
            self.table.conditional(
                Item=to_dynamo(_item(stored)),
                ConditionExpression="revision = :read",
                ExpressionAttributeValues={":read": bisection.revision},
            )
            is not None
        )


def _item(b: Bisection) -> dict[str, object]:
    key = keys.bisection(b.repo, b.branch, b.model, b.bad_run_id)
    return {**key, "revision": b.revision, "bisection": b.to_json()}


def _record(item: dict[str, object]) -> Bisection:
    data = item["bisection"]
    assert isinstance(data, dict)
    return replace(Bisection.from_json(data), revision=int(str(item.get("revision", 0))))
