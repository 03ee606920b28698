"""The history a run is judged against, as the finisher judges it and its report draws it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from distkpi.domain.history_rows import rows_from_records
from distkpi.domain.judging.history import HistoryRow, until_commit
from distkpi.domain.records import ResetRecord, RunRecord
from distkpi.services.ports import History


@dataclass(frozen=True)
class Baseline:
    rows: list[HistoryRow]
    resets: dict[str, str]  # config (or "*") -> the latest audited reset


def baseline_of(history: History, run: RunRecord) -> Baseline:
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
    return Baseline(rows, latest_resets(history.resets(t.repo, run.baseline_branch, run.model)))


def latest_resets(resets: Iterable[ResetRecord]) -> dict[str, str]:
    """config (or "*") -> when its baseline was last reset: the runs before it do not count."""
    latest: dict[str, str] = {}
    for reset in resets:
        latest[reset.config] = max(latest.get(reset.config, ""), reset.at)
    return latest
