"""The history a run is judged against, as the finisher judges it and its report draws it."""

from __future__ import annotations

from dataclasses import dataclass

from distkpi.adapters.dynamo import HistoryRepository
from distkpi.domain.judging.history import HistoryRow, rows_from_records, until_commit
from distkpi.domain.records import RunRecord


@dataclass(frozen=True)
class Baseline:
    rows: list[HistoryRow]
    resets: dict[str, str]  # config (or "*") -> the latest audited reset


def baseline_of(history: HistoryRepository, run: RunRecord) -> Baseline:
    """For a pull request the base branch's runs up to the merge base (else its latest
    runs), for a push the branch's own earlier runs. Reads the window of runs of every
    config four times over, so that runs set aside (failed, older than the merge base or a
    reset) still leave a full window."""
    t = run.trigger
    limit = 4 * run.verdict_settings.window * len(run.spec.configs)
    records = history.history(t.repo, run.baseline_branch, run.model, limit=limit)
    rows = [r for r in rows_from_records(records) if r.run_id != run.run_id]
    if t.event == "pull_request":
        rows = until_commit(rows, t.base_sha)
    resets: dict[str, str] = {}
    for reset in history.resets(t.repo, run.baseline_branch, run.model):
        resets[reset.config] = max(resets.get(reset.config, ""), reset.at)
    return Baseline(rows, resets)
