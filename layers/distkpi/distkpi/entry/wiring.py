"""Adapters built once per Lambda container, on first use (never at import time)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from distkpi.adapters.batch import BatchLauncher
from distkpi.adapters.dynamo import RunRepository
from distkpi.adapters.github import GitHubStatusClient, TimeBudget
from distkpi.adapters.s3_runs import S3RunStore
from distkpi.adapters.secrets import SecretReader
from distkpi.domain.suites import BrokenSuite, Suite, parse_deployed_suites
from distkpi.entry.observability import count
from distkpi.services.launch import RunStarter
from distkpi.services.statuses import StatusPublisher
from distkpi.settings import Settings, load_settings

if TYPE_CHECKING:
    from distkpi.services.deadlines import RunDeadlines
    from distkpi.services.fanin import FanIn


class Wiring:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.environ)

    @cached_property
    def secrets(self) -> SecretReader:
        return SecretReader()

    @cached_property
    def store(self) -> S3RunStore:
        return S3RunStore(self.settings.bucket_name)

    def webhook_secret(self) -> bytes:
        secret_id = self.settings.webhook_secret_id
        if not secret_id:
            raise RuntimeError("WEBHOOK_SECRET_ID is not set")
        return self.secrets.get(secret_id).encode()

    def github_token(self) -> str:
        return self.secrets.get(self.settings.github_token_secret_id)

    def launcher(self) -> BatchLauncher | None:
        s = self.settings
        if not (s.job_queue and s.single_node_job_definition and s.multi_node_job_definition):
            return None
        return BatchLauncher(s.job_queue, s.single_node_job_definition, s.multi_node_job_definition)

    def report_url(self, run_id: str) -> str:
        """REPORT_BASE_URL/reports/<run>/index.html, else a presigned link to the object
        (valid while the function's credentials are, hours: set a base URL for good links)."""
        key = f"reports/{run_id}/index.html"
        base = self.settings.report_base_url
        return f"{base.rstrip('/')}/{key}" if base else self.store.presigned_url(key)

    @cached_property
    def github_budget(self) -> TimeBudget | None:
        budget = self.settings.github_budget_s
        return TimeBudget(budget) if budget is not None else None

    @cached_property
    def statuses(self) -> StatusPublisher:
        s = self.settings
        github = GitHubStatusClient(
            s.github_api_url,
            self.github_token,
            retries=s.github_retries,
            backoff_s=s.github_backoff_s,
            timeout_s=(min(3.05, s.github_timeout_s), s.github_timeout_s),
            budget=self.github_budget,
        )
        return StatusPublisher(github, self.report_url, count)

    @cached_property
    def runs(self) -> RunRepository:
        return RunRepository(self.settings.table_name)

    @cached_property
    def starter(self) -> RunStarter:
        return RunStarter(self.runs, self.store, self.statuses, self.launcher(), count)

    @cached_property
    def fanin(self) -> FanIn:
        from distkpi.services.fanin import FanIn

        return FanIn(self.runs, self.store, self.statuses, count)

    @cached_property
    def deadlines(self) -> RunDeadlines:
        from distkpi.services.deadlines import RunDeadlines

        return RunDeadlines(
            self.runs, self.fanin, self.launcher(), self.settings.run_timeout_s, count
        )

    def suites(self) -> tuple[list[Suite], list[BrokenSuite]]:
        """The suites deployed under SUITES_PREFIX in the bucket, read on every delivery."""
        prefix = self.settings.suites_prefix
        names = [n for n in self.store.list_names(prefix) if n.endswith((".yaml", ".yml"))]
        return parse_deployed_suites(
            ((name, self.store.read_bytes(prefix + name)) for name in names),
            prefix,
        )


_wiring: Wiring | None = None


def wiring() -> Wiring:
    global _wiring  # noqa: PLW0603 - one per container, made on first use
    if _wiring is None:
        _wiring = Wiring(dict(os.environ))
    return _wiring


def reset() -> None:
    """Forget the container's adapters (tests start each case with a fresh AWS)."""
    global _wiring  # noqa: PLW0603
    _wiring = None
