"""The webhook's and the launcher's bookkeeping: jobs submitted, the runs of each pull
request (deliveries seen: deliveries.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from boto3.dynamodb.conditions import Key

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable
from distkpi.domain.records import JobRecord, PullRequestRun

PR_TTL_S = 90 * 24 * 3600


class JobRepository:
    def __init__(self, table: DynamoTable, retention_days: int | None = None) -> None:
        self.table = table
        # a job's item goes (TTL) this many days after it was submitted; None: never
        self.retention_days = retention_days

    def record(self, job: JobRecord) -> None:
        expiry = {}
        if self.retention_days is not None:
            expiry["expires_at"] = int(time.time()) + self.retention_days * 24 * 3600
        self.table.put(
            {
                **keys.job(job.job_id),
                "run_id": job.run_id,
                "config": job.config,
                "request": dict(job.request),
                **expiry,
            }
        )

    def get(self, job_id: str) -> JobRecord | None:
        item = self.table.get(keys.job(job_id))
        if item is None:
            return None
        return JobRecord(job_id, str(item["run_id"]), str(item["config"]), item["request"])


class PullRequestRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def add(self, repo: str, number: int, run: PullRequestRun) -> None:
        expires = int(datetime.fromisoformat(run.created_at).timestamp()) + PR_TTL_S
        self.table.put(
            {
                "PK": keys.pull_request(repo, number),
                "SK": keys.ordered(run.created_at, run.run_id),
                "run_id": run.run_id,
                "sha": run.sha,
                "model": run.model,
                "updated_at": run.updated_at,
                "created_at": run.created_at,
                "expires_at": expires,
            }
        )

    def runs(self, repo: str, number: int) -> list[PullRequestRun]:
        """Every run started for a pull request (within the TTL), oldest first."""
        found = self.table.query(
            KeyConditionExpression=Key("PK").eq(keys.pull_request(repo, number))
        )
        return [_pull_request_run(item) for item in found]


def _pull_request_run(item: Mapping[str, Any]) -> PullRequestRun:
    return PullRequestRun(
        run_id=str(item["run_id"]),
        sha=str(item["sha"]),
        model=str(item["model"]),
        updated_at=str(item.get("updated_at") or ""),
        created_at=str(item.get("created_at") or str(item["SK"]).split("#", 1)[0]),
    )
