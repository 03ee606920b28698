"""Each function's adapters, built from its settings once per container (on its first event)
and never changed after, under the composition root (entry/root.py) that builds the
services from them. Wiring only wires: what to read, decide or write lives in the services
and adapters."""

from __future__ import annotations

import os
import time
import weakref
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from distkpi.adapters.batch import BatchLauncher
from distkpi.adapters.dynamo import (
    DeliveryClaims,
    DynamoTable,
    HistoryRepository,
    JobRepository,
    PullRequestRepository,
    RunRepository,
)
from distkpi.adapters.dynamo.pacing import PaceSlots
from distkpi.adapters.ec2 import InstanceCatalog
from distkpi.adapters.github import GitHubStatusClient, TimeBudget
from distkpi.adapters.github_app import AppAuth, AppCredentials
from distkpi.adapters.github_limits import Rate, WritePacer
from distkpi.adapters.pacing import TokenBucket
from distkpi.adapters.s3_runs import S3RunStore
from distkpi.adapters.secrets import SecretReader
from distkpi.adapters.suite_catalog import SuiteCatalog
from distkpi.domain.github.report_links import report_link
from distkpi.domain.layout import report_key
from distkpi.domain.planning.sizing import Fleet
from distkpi.domain.signing import ManifestKeys
from distkpi.entry.observability import count
from distkpi.entry.root import Services
from distkpi.services.launch import RunStarter
from distkpi.services.ports import Clock, Counter, utcnow
from distkpi.services.statuses import StatusPublisher
from distkpi.settings import (
    BatchSettings,
    DeadlineSettings,
    FunctionSettings,
    LauncherSettings,
    SweeperSettings,
    WebhookSettings,
    load_settings,
)

if TYPE_CHECKING:
    from distkpi.adapters.dynamo.alarms import AlarmRepository
    from distkpi.adapters.dynamo.bisections import BisectionRepository
    from distkpi.adapters.dynamo.notices import ChatQuotaRepository, CommentRepository
    from distkpi.adapters.dynamo.regressions import RegressionRepository
    from distkpi.adapters.queues import MessageQueue
    from distkpi.adapters.slack import SlackWebhook
    from distkpi.adapters.sns import AlertTopic
    from distkpi.services.accept import Acceptances
    from distkpi.services.deadlines import RunDeadlines
    from distkpi.services.intake import DeliveryIntake
    from distkpi.services.looks import PairedLooks
    from distkpi.services.publish import DrawReport, Publisher
    from distkpi.services.schedule import ScheduledRuns
    from distkpi.services.settle import ConfigSettler


class Wiring:
    """What every function has: storage, GitHub and the fan-in (collector, job_events), as
    the adapters (entry/root.Adapters) of the composition root that builds the services."""

    draw: DrawReport | None = None  # the real report

    def __init__(self, settings: FunctionSettings, own_url: str | None = None) -> None:
        self.settings = settings
        self.own_url = own_url  # the webhook's Function URL; None for the other functions

    @cached_property
    def services(self) -> Services:
        return Services(self)

    @property
    def statuses(self) -> StatusPublisher:
        return self.services.statuses

    @property
    def publisher(self) -> Publisher:
        return self.services.publisher

    @property
    def settler(self) -> ConfigSettler:
        return self.services.settler

    @property
    def looks(self) -> PairedLooks:
        return self.services.looks

    @property
    def launcher(self) -> BatchLauncher | None:
        return None  # a function that submits no jobs

    @property
    def confirms(self) -> bool:
        """A finisher starts confirmation runs where jobs can be submitted."""
        return self.launcher is not None

    @property
    def cancel_superseded(self) -> bool:
        return True

    @property
    def run_timeout_s(self) -> int:
        raise AttributeError("only the sweeper and the deadlines function expire runs")

    @property
    def queue_wait_s(self) -> int:
        raise AttributeError("only the sweeper and the deadlines function expire runs")

    @property
    def catalog(self) -> SuiteCatalog:
        raise AttributeError("only a function that submits jobs reads the suites")

    def fleet(self) -> Fleet | None:
        return None

    @property
    def count(self) -> Counter:
        return count

    @property
    def clock(self) -> Clock:
        return utcnow

    @cached_property
    def secrets(self) -> SecretReader:
        return SecretReader()

    @cached_property
    def store(self) -> S3RunStore:
        return S3RunStore(self.settings.bucket_name)

    @cached_property
    def table(self) -> DynamoTable:
        return DynamoTable(self.settings.table_name)

    @cached_property
    def runs(self) -> RunRepository:
        return RunRepository(self.table, self.settings.retention_days)

    @cached_property
    def jobs(self) -> JobRepository:
        return JobRepository(self.table, self.settings.retention_days)

    @cached_property
    def history(self) -> HistoryRepository:
        return HistoryRepository(self.table)

    @cached_property
    def deliveries(self) -> DeliveryClaims:
        return DeliveryClaims(self.settings.table_name)

    @cached_property
    def pull_requests(self) -> PullRequestRepository:
        return PullRequestRepository(self.table)

    @cached_property
    def alarms(self) -> AlarmRepository | None:
        from distkpi.adapters.dynamo.alarms import AlarmRepository

        return AlarmRepository(self.table) if self.settings.alert_topic_arn else None

    @cached_property
    def topic(self) -> AlertTopic | None:
        from distkpi.adapters.sns import AlertTopic

        arn = self.settings.alert_topic_arn
        return AlertTopic(arn) if arn else None

    @cached_property
    def comments(self) -> CommentRepository:
        from distkpi.adapters.dynamo.notices import CommentRepository

        return CommentRepository(self.table)

    @cached_property
    def chat(self) -> SlackWebhook | None:
        from distkpi.adapters.slack import SlackWebhook

        secret_id = self.settings.chat_webhook_secret_id
        if secret_id is None:
            return None
        return SlackWebhook(lambda: self.secrets.get(secret_id))

    @cached_property
    def chat_quota(self) -> ChatQuotaRepository:
        from distkpi.adapters.dynamo.notices import ChatQuotaRepository

        return ChatQuotaRepository(self.table)

    @property
    def chat_per_hour(self) -> int:
        return self.settings.chat_messages_per_hour

    @cached_property
    def bisections(self) -> BisectionRepository:
        from distkpi.adapters.dynamo.bisections import BisectionRepository

        return BisectionRepository(self.table)

    @cached_property
    def regressions(self) -> RegressionRepository:
        from distkpi.adapters.dynamo.regressions import RegressionRepository

        return RegressionRepository(self.table)

    @cached_property
    def app_auth(self) -> AppAuth | None:
        """The GitHub App's sign-in, when the stack has an App (else a personal token)."""
        s = self.settings
        secret_id = s.github_app_secret_id
        if secret_id is None:
            return None
        from distkpi.adapters.dynamo.github_app import AppTokenRepository

        return AppAuth(
            s.github_api_url,
            lambda: AppCredentials.from_secret(self.secrets.get(secret_id)),
            timeout_s=(min(3.05, s.github_timeout_s), s.github_timeout_s),
            store=AppTokenRepository(self.table),
        )

    def github_writer(self, repo: str) -> str:
        """Whose GitHub writes are paced together: the App's installation on ``repo``, else
        the personal token's."""
        if self.app_auth is not None:
            return f"installation-{self.app_auth.installation(repo)}"
        return "token"

    def app_id(self) -> str | None:
        """The stack's GitHub App, whose checks alone it re-runs; None without one."""
        secret_id = self.settings.github_app_secret_id
        if secret_id is None:
            return None
        return AppCredentials.from_secret(self.secrets.get(secret_id)).app_id

    def github_token(self, repo: str) -> str:
        if self.app_auth is not None:
            return self.app_auth.token_for(repo)
        return self.secrets.get(self.settings.github_token_secret_id)

    def report_url(self, run_id: str) -> str:
        """REPORT_BASE_URL/reports/<run>/index.html (a public site); else a signed link to
        the webhook's /reports route, which lasts a year and redirects to a fresh
        presigned URL; else (a stack without one, as locally) a presigned URL."""
        key = report_key(run_id)
        s = self.settings
        if s.report_base_url:
            return f"{s.report_base_url.rstrip('/')}/{key}"
        base = s.reports_url or self.own_url
        if base and s.report_link_secret_id:
            return report_link(base, self.report_link_key(), run_id, time.time())
        return self.store.presigned_url(key)

    @cached_property
    def manifest_keys(self) -> ManifestKeys:
        return ManifestKeys(lambda: self.secrets.get(self.settings.manifest_secret_id))

    def report_link_key(self) -> bytes:
        assert self.settings.report_link_secret_id is not None
        return self.secrets.get(self.settings.report_link_secret_id).encode()

    @cached_property
    def github_budget(self) -> TimeBudget | None:
        budget = self.settings.github_budget_s
        return TimeBudget(budget) if budget is not None else None

    @cached_property
    def github(self) -> GitHubStatusClient:
        s = self.settings
        return GitHubStatusClient(
            s.github_api_url,
            self.github_token,
            retries=s.github_retries,
            backoff_s=s.github_backoff_s,
            timeout_s=(min(3.05, s.github_timeout_s), s.github_timeout_s),
            budget=self.github_budget,
            refused=self.app_auth.forget if self.app_auth is not None else None,
            pacer=WritePacer(
                PaceSlots(self.table),
                (
                    Rate(s.github_write_interval_s, s.github_write_burst),
                    Rate(s.github_write_hour_interval_s, s.github_write_hour_burst),
                ),
            ),
            pace_key=self.github_writer,
            max_wait_s=s.github_max_wait_s,
            count=self.count,
        )

    @property
    def checks(self) -> bool:
        return self.app_auth is not None

    @property
    def github_web_url(self) -> str:
        return self.settings.github_web_url


class BatchWiring(Wiring):
    """The functions that submit or stop jobs: the launcher, the fan-in (confirmation runs),
    the sweeper and the deadlines function."""

    settings: BatchSettings

    @cached_property
    def batch(self) -> BatchLauncher:
        s = self.settings
        return BatchLauncher(
            s.job_queue,
            s.single_node_job_definition,
            s.multi_node_job_definition,
            fair_share=s.fair_share,
            pace=TokenBucket(s.submit_jobs_per_s),
            throttle_retries=s.submit_throttle_retries,
            throttle_backoff_s=s.submit_throttle_backoff_s,
        )

    @property
    def launcher(self) -> BatchLauncher:
        return self.batch

    @property
    def starter(self) -> RunStarter:
        return self.services.starter

    @cached_property
    def suites(self) -> SuiteCatalog:
        return SuiteCatalog(self.store, self.settings.suites_prefix)

    @property
    def catalog(self) -> SuiteCatalog:
        return self.suites

    @cached_property
    def instances(self) -> InstanceCatalog:
        return InstanceCatalog()

    def fleet(self) -> Fleet:
        s = self.settings
        pserver_type = s.pserver_instance_type
        return Fleet(
            s.max_vcpus,
            self.instances.shapes(s.instance_types),
            self.instances.shapes([pserver_type])[0] if pserver_type else None,
            s.sizing,
        )


class WebhookWiring(Wiring):
    """The webhook: it verifies, claims, records and queues; it submits nothing."""

    settings: WebhookSettings

    def webhook_secret(self) -> bytes:
        return self.secrets.get(self.settings.webhook_secret_id).encode()

    @cached_property
    def intake(self) -> DeliveryIntake:
        from distkpi.adapters.queues import MessageQueue
        from distkpi.services.intake import DeliveryIntake

        queue = MessageQueue(self.settings.delivery_queue_url)
        return DeliveryIntake(self.deliveries, self.store, queue, self.count)


class LauncherWiring(BatchWiring):
    """The launcher behind the delivery queue: the runs a delivery starts."""

    settings: LauncherSettings

    @property
    def acceptances(self) -> Acceptances:
        """An accept asked, a merge, and a push of an accepted head (services/accept.py)."""
        return self.services.acceptances

    @property
    def cancel_superseded(self) -> bool:
        return self.settings.cancel_superseded

    @cached_property
    def schedule(self) -> ScheduledRuns:
        from distkpi.services.schedule import ScheduledRuns

        return ScheduledRuns(self.github, self.catalog, self.starter.delivery, self.count)


class DeadlineWiring(BatchWiring):
    settings: DeadlineSettings

    @property
    def run_timeout_s(self) -> int:
        return self.settings.run_timeout_s

    @property
    def queue_wait_s(self) -> int:
        return self.settings.queue_wait_s

    @property
    def deadlines(self) -> RunDeadlines:
        return self.services.deadlines


class SweeperWiring(DeadlineWiring):
    settings: SweeperSettings

    @cached_property
    def overdue_queue(self) -> MessageQueue:
        from distkpi.adapters.queues import MessageQueue

        return MessageQueue(self.settings.overdue_queue_url)


def build_webhook(settings: WebhookSettings, own_url: str | None = None) -> WebhookWiring:
    """The webhook's collaborators; ``own_url`` is its Function URL (a stack cannot give a
    function its own URL: it comes with the requests it serves), where report links point."""
    return WebhookWiring(settings, own_url)


def build_launcher(settings: LauncherSettings) -> LauncherWiring:
    return LauncherWiring(settings)


def build_deadlines(settings: DeadlineSettings) -> DeadlineWiring:
    return DeadlineWiring(settings)


def build_fanin(settings: BatchSettings) -> BatchWiring:
    """The collector's and job_events' collaborators."""
    return BatchWiring(settings)


def build_sweeper(settings: SweeperSettings) -> SweeperWiring:
    return SweeperWiring(settings)


class Container:
    """What one Lambda container keeps between events: each function's wiring, built on its
    first event from the function's environment, and never changed after."""

    _every: ClassVar[weakref.WeakSet[Container]] = weakref.WeakSet()

    def __init__(self) -> None:
        self.forget()
        Container._every.add(self)

    def forget(self) -> None:
        self._webhook: dict[str | None, WebhookWiring] = {}
        self._fanin: BatchWiring | None = None
        self._sweeper: SweeperWiring | None = None
        self._launcher: LauncherWiring | None = None
        self._deadlines: DeadlineWiring | None = None

    def launcher(self) -> LauncherWiring:
        if self._launcher is None:
            self._launcher = build_launcher(load_settings(LauncherSettings, os.environ))
        return self._launcher

    def deadlines(self) -> DeadlineWiring:
        if self._deadlines is None:
            self._deadlines = build_deadlines(load_settings(DeadlineSettings, os.environ))
        return self._deadlines

    def webhook(self, own_url: str | None = None) -> WebhookWiring:
        if own_url not in self._webhook:
            settings = load_settings(WebhookSettings, os.environ)
            self._webhook[own_url] = build_webhook(settings, own_url)
        return self._webhook[own_url]

    def fanin(self) -> BatchWiring:
        if self._fanin is None:
            self._fanin = build_fanin(load_settings(BatchSettings, os.environ))
        return self._fanin

    def sweeper(self) -> SweeperWiring:
        if self._sweeper is None:
            self._sweeper = build_sweeper(load_settings(SweeperSettings, os.environ))
        return self._sweeper


_current = Container()


def webhook(own_url: str | None = None) -> WebhookWiring:
    return _current.webhook(own_url)


def fanin() -> BatchWiring:
    return _current.fanin()


def launcher() -> LauncherWiring:
    return _current.launcher()


def deadlines() -> DeadlineWiring:
    return _current.deadlines()


def sweeper() -> SweeperWiring:
    return _current.sweeper()


def use(container: Container) -> None:
    """Handle the next events as ``container`` (tests keep one per AWS identity, as each
    function's container has its own credentials)."""
    global _current  # noqa: PLW0603 - which container is handling, switched only by tests
    _current = container


def reset() -> None:
    """Forget every container's wiring, as new containers would (tests: a fresh AWS, or
    settings changed)."""
    for container in list(Container._every):
        container.forget()
