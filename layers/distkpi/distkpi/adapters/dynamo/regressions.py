"""Regressions per (repo, branch, model), by key: each one item, its record as JSON, written
whole under a condition on the revision read, so two writers cannot both move it on."""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.conditions import Key

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable, to_dynamo
from distkpi.domain.regressions import Regression


class RegressionRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def get(self, repo: str, branch: str, model: str, regression_id: str) -> Regression | None:
        item = self.table.get(keys.regression(repo, branch, model, regression_id), consistent=True)
        return None if item is None else Regression.from_json(item["regression"])

    def of_branch(self, repo: str, branch: str, model: str) -> list[Regression]:
        """The branch's regressions of the model, oldest first."""
        found = self.table.query(
            KeyConditionExpression=Key("PK").eq(keys.regressions(repo, branch, model)),
            ConsistentRead=True,
        )
        listed = [Regression.from_json(i["regression"]) for i in found]
        return sorted(listed, key=lambda r: (r.opened_at, r.id))

    def create(self, regression: Regression) -> bool:
        """False when it is stored already (the run's alert published again)."""
        return (
            self.table.conditional(
                Item=to_dynamo(_item(regression)),
                ConditionExpression="attribute_not_exists(PK)",
            )
            is not None
        )

    def save(self, before: Regression, after: Regression) -> bool:
        """Store ``after`` in place of ``before``; False when another writer changed it
        since ``before`` was read (its revision: the length of its history)."""
        return (
            self.table.conditional(
                Item=to_dynamo(_item(after)),
                ConditionExpression="revision = :read",
                ExpressionAttributeValues={":read": len(before.history)},
            )
            is not None
        )


def _item(r: Regression) -> dict[str, Any]:
    key = keys.regression(r.repo, r.branch, r.model, r.id)
    return {**key, "revision": len(r.history), "state": r.state.value, "regression": r.to_json()}
