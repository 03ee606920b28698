"""KPI history per (repo, branch, model), newest first, and its audited baseline resets."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from boto3.dynamodb.conditions import Key

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable, to_dynamo
from distkpi.domain.github.acceptance import Acceptance
from distkpi.domain.records import HistoryRecord, ResetRecord, RunRecord, SeriesRecord, is_published

PR_SERIES_TTL_S = 90 * 24 * 3600  # as long as a pull request's runs are listed (bookkeeping)


def history_item(record: HistoryRecord) -> dict[str, Any]:
    return {
        "PK": keys.history(record.repo, record.branch, record.model),
        "SK": keys.history_entry(record.created_at, record.run_id, record.config),
        "repo": record.repo,
        "branch": record.branch,
        "model": record.model,
        "config": record.config,
        "sha": record.sha,
        "run_id": record.run_id,
        "created_at": record.created_at,
        "finished_at": record.finished_at,
        "kpis": record.kpis.to_record(),
        "judged": {kpi: dict(judged) for kpi, judged in record.judged.items()},
        "paired": dict(record.paired),
        "calibration": record.calibration,
        **({"accepted": record.accepted.to_json()} if record.accepted else {}),
        **({"verdict": record.verdict} if record.verdict is not None else {}),
    }


def history_record(item: Mapping[str, Any]) -> HistoryRecord:
    from distkpi.domain.kpis.engine import (
        ConfigKpis,  # the KPI engine stays off the webhook's imports
    )

    return HistoryRecord(
        repo=str(item["repo"]),
        branch=str(item["branch"]),
        model=str(item["model"]),
        config=str(item["config"]),
        sha=str(item["sha"]),
        run_id=str(item["run_id"]),
        created_at=str(item["created_at"]),
        finished_at=str(item["finished_at"]),
        kpis=ConfigKpis.from_record({"name": item["config"], **item["kpis"]}),
        judged=item.get("judged") or {},
        paired={str(k): float(v) for k, v in (item.get("paired") or {}).items()},
        calibration=bool(item.get("calibration", False)),
        accepted=Acceptance.from_json(item["accepted"]) if item.get("accepted") else None,
        verdict=None if item.get("verdict") is None else str(item["verdict"]),
    )


class HistoryRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def put(self, records: Iterable[HistoryRecord]) -> None:
        """Keyed by the run's creation time, so writing a run's records again is harmless."""
        self.table.put_all(history_item(r) for r in records)

    def history(
        self, repo: str, branch: str, model: str, since: str | None = None, limit: int | None = None
    ) -> Iterator[HistoryRecord]:
        """History records of (repo, branch, model), newest first."""
        condition: Any = Key("PK").eq(keys.history(repo, branch, model))
        if since:
            condition = condition & Key("SK").gte(since)
        found = self.table.query(KeyConditionExpression=condition, ScanIndexForward=False)
        for count, item in enumerate(found):
            if limit is not None and count >= limit:
                return
            yield history_record(item)

    def accept(self, run: RunRecord, acceptance: Acceptance) -> None:
        """Keep the acceptance on each of the run's history records (by their keys)."""
        partition = keys.history(run.trigger.repo, run.history_branch, run.model)
        for config in run.spec.configs:
            self.table.conditional(
                Key={
                    "PK": partition,
                    "SK": keys.history_entry(run.created_at, run.run_id, config.name),
                },
                UpdateExpression="SET accepted = :accepted",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":accepted": to_dynamo(acceptance.to_json())},
            )

    def record_reset(self, reset: ResetRecord) -> None:
        self.table.put(
            {
                "PK": keys.reset(reset.repo, reset.branch, reset.model),
                "SK": f"{reset.at}#{reset.config}",
                "config": reset.config,
                "reason": reset.reason,
                "who": reset.who,
                "at": reset.at,
            }
        )

    def resets(self, repo: str, branch: str, model: str) -> list[ResetRecord]:
        """Audited baseline resets of (repo, branch, model), oldest first."""
        found = self.table.query(
            KeyConditionExpression=Key("PK").eq(keys.reset(repo, branch, model))
        )
        return [
            ResetRecord(
                repo, branch, model, str(r["config"]), str(r["reason"]), str(r["who"]), str(r["at"])
            )
            for r in found
        ]

    def record_series(self, series: SeriesRecord) -> None:
        """The (repo, branch, model)'s latest run: a branch's in the site's index (SERIES),
        a pull request's, which the site never shows, in its repository's own partition,
        for as long as its runs are listed (TTL); an older run that finishes late does not
        replace a newer one."""
        published = is_published(series.branch)
        key = (keys.series_entry if published else keys.pull_request_series_entry)(
            series.repo, series.branch, series.model
        )
        expiry = {} if published else {"expires_at": _epoch(series.finished_at) + PR_SERIES_TTL_S}
        item = {
            **key,
            **expiry,
            "repo": series.repo,
            "branch": series.branch,
            "model": series.model,
            "run_id": series.run_id,
            "state": series.state,
            "description": series.description,
            "finished_at": series.finished_at,
        }
        self.table.conditional(
            Item=item,
            ConditionExpression="attribute_not_exists(finished_at) OR finished_at <= :at",
            ExpressionAttributeValues={":at": series.finished_at},
        )

    def series(self, repo: str | None = None) -> list[SeriesRecord]:
        """Every branch's history with its latest run (only ``repo``'s when given), by key:
        the site's index. A pull request's is in ``pull_request_series``."""
        condition: Any = Key("PK").eq(keys.SERIES)
        if repo is not None:
            condition = condition & Key("SK").begins_with(f"{repo}#")
        return _series(self.table.query(KeyConditionExpression=condition))

    def pull_request_series(self, repo: str) -> list[SeriesRecord]:
        """``repo``'s pull requests' histories with their latest runs (within the TTL)."""
        partition = keys.pull_request_series(repo)
        return _series(self.table.query(KeyConditionExpression=Key("PK").eq(partition)))


def _epoch(at: str) -> int:
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return int(datetime.now(UTC).timestamp())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def _series(items: Iterable[Mapping[str, Any]]) -> list[SeriesRecord]:
    return [
        SeriesRecord(
            str(i["repo"]),
            str(i["branch"]),
            str(i["model"]),
            str(i["run_id"]),
            str(i["state"]),
            str(i["description"]),
            str(i["finished_at"]),
        )
        for i in items
    ]
