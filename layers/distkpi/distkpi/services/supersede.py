"""Superseding: a pull request's runs of an older head are cancelled once a newer one runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.commit_status import State
from distkpi.domain.github.webhook import Trigger
from distkpi.services.ports import Counter, PullRequests, Runs, no_metrics
from distkpi.services.run_launcher import RunLauncher
from distkpi.services.statuses import StatusPublisher

logger = Logger(child=True)


@dataclass
class Superseder:
    runs: Runs
    pull_requests: PullRequests
    statuses: StatusPublisher
    launcher: RunLauncher
    count: Counter = no_metrics

    def quietly(self, trigger: Trigger, models: list[str]) -> None:
        """The new runs have started whatever happens here, so a failure is logged."""
        try:
            self.supersede(trigger, models)
        except Exception:
            logger.exception("superseded runs not cancelled")
            self.count("SupersedeFailures")

    def supersede(self, trigger: Trigger, models: Iterable[str]) -> list[str]:
        """Keep only the runs of a pull request's newest head, per suite: the others are
        cancelled and their jobs stopped, since nobody waits for those results and the new
        runs need the GPUs. "Newest" is by the pull request's `updated_at`, so a delivery
        that arrives late cancels its own runs, not the newer ones. The runs cancelled."""
        if trigger.pull_request is None:
            return []
        wanted = set(models)
        entries = [
            e
            for e in self.pull_requests.runs(trigger.repo, trigger.pull_request)
            if e.model in wanted
        ]
        cancelled = []
        for model in sorted(wanted):
            runs = [e for e in entries if e.model == model]
            if not runs:
                continue
            newest = max(runs, key=lambda e: (e.updated_at, e.created_at, e.run_id))
            for entry in runs:
                if entry.sha != newest.sha and self._cancel(entry.run_id, newest.sha):
                    cancelled.append(entry.run_id)
        return cancelled

    def _cancel(self, run_id: str, by_sha: str) -> bool:
        reason = f"cancelled: superseded by {by_sha[:10]}"
        if not self.launcher.mark_cancelled(run_id, reason):
            return False  # finished, or cancelled already
        run = self.runs.get(run_id)
        if run is not None:
            self.statuses.post(run.spec, State.ERROR, reason)
        self.launcher.stop_pending(run_id, reason)
        self.count("RunsSuperseded")
        logger.info("run superseded", run_id=run_id, by=by_sha)
        return True
