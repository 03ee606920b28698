"""What has been alarmed of per (repo, branch, model), and its last passing commit."""

from __future__ import annotations

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable
from distkpi.domain.github.alerts import AlarmState


class AlarmRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def get(self, repo: str, branch: str, model: str) -> AlarmState:
        item = self.table.get(keys.alarm(repo, branch, model), consistent=True) or {}
        return AlarmState(frozenset(item.get("alarmed") or ()), item.get("last_pass_sha"))

    def put(self, repo: str, branch: str, model: str, state: AlarmState) -> None:
        item = {**keys.alarm(repo, branch, model), "alarmed": sorted(state.alarmed)}
        if state.last_pass_sha:
            item["last_pass_sha"] = state.last_pass_sha
        self.table.put(item)
