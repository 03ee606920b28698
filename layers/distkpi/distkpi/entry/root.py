"""The composition root: every service, built from the adapters a stack gives it, in one
place and one order. The Lambdas' wiring (entry/wiring.py) gives AWS's and GitHub's
adapters; the service tests (tests/service/pipeline.py) give in-memory ones. Each service
is built on first use, so a function builds only what its events need (the webhook never
imports the KPI engine or the report)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from distkpi.services.check_sections import CheckSections
from distkpi.services.launch import RunStarter
from distkpi.services.statuses import StatusPublisher

if TYPE_CHECKING:
    from distkpi.domain.planning.sizing import Fleet
    from distkpi.domain.records import RunRecord
    from distkpi.domain.signing import ManifestKeys
    from distkpi.services.accept import Acceptances
    from distkpi.services.alerts import RegressionAlerts
    from distkpi.services.bisect import Bisector
    from distkpi.services.chat import ChatAlerts
    from distkpi.services.deadlines import RunDeadlines
    from distkpi.services.finish import RunFinisher
    from distkpi.services.job_starts import JobStarts
    from distkpi.services.looks import PairedLooks
    from distkpi.services.owners import SuiteOwners
    from distkpi.services.ports import (
        Alarms,
        Bisections,
        Chat,
        ChatQuota,
        Clock,
        Comments,
        Counter,
        Deliveries,
        GitHub,
        History,
        JobLauncher,
        Jobs,
        PullRequests,
        Regressions,
        RunFolders,
        Runs,
        SuiteSource,
        Topic,
    )
    from distkpi.services.pr_comments import PullRequestComments
    from distkpi.services.publish import DrawReport, Publisher
    from distkpi.services.regressions import RegressionLedger
    from distkpi.services.settle import ConfigSettler
    from distkpi.services.site import SitePublisher


class Adapters(Protocol):
    """What a stack gives its services: each built when first asked for."""

    @property
    def runs(self) -> Runs: ...
    @property
    def history(self) -> History: ...
    @property
    def jobs(self) -> Jobs: ...
    @property
    def store(self) -> RunFolders: ...
    @property
    def catalog(self) -> SuiteSource: ...
    @property
    def github(self) -> GitHub: ...
    @property
    def manifest_keys(self) -> ManifestKeys: ...
    @property
    def count(self) -> Counter: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def checks(self) -> bool:
        """Signed in as a GitHub App: check runs instead of commit statuses."""
        ...

    @property
    def github_web_url(self) -> str: ...
    # a stack with a regression topic raises alerts (alarms and topic: None otherwise)
    @property
    def alarms(self) -> Alarms | None: ...
    @property
    def topic(self) -> Topic | None: ...
    # a stack that submits jobs (the webhook, the fan-in, the sweeper); None otherwise
    # a pull request's comment per suite; the chat (None: a stack without a webhook)
    @property
    def comments(self) -> Comments: ...
    @property
    def chat(self) -> Chat | None: ...
    @property
    def chat_quota(self) -> ChatQuota: ...
    @property
    def chat_per_hour(self) -> int: ...
    @property
    def launcher(self) -> JobLauncher | None: ...
    @property
    def deliveries(self) -> Deliveries: ...
    @property
    def pull_requests(self) -> PullRequests: ...
    @property
    def bisections(self) -> Bisections | None: ...
    @property
    def regressions(self) -> Regressions: ...
    @property
    def cancel_superseded(self) -> bool: ...
    @property
    def run_timeout_s(self) -> int: ...
    @property
    def queue_wait_s(self) -> int: ...
    @property
    def confirms(self) -> bool:
        """Whether a finisher starts confirmation runs (the stack's: where it may submit)."""
        ...

    @property
    def draw(self) -> DrawReport | None:
        """The report drawn when a run is published (None: the real one)."""
        ...

    def report_url(self, run_id: str) -> str: ...
    def fleet(self) -> Fleet | None:
        """What the compute environment can give; None: what the job definitions say."""
        ...


class Services:
    """The services of one stack, from its adapters."""

    def __init__(self, stack: Adapters) -> None:
        self.stack = stack

    @cached_property
    def statuses(self) -> StatusPublisher:
        sections = CheckSections(
            self.stack.store,
            self.stack.bisections,
            self.stack.report_url,
            self.stack.github_web_url,
        )
        return StatusPublisher(
            self.stack.github,
            self.stack.report_url,
            sections,
            self.stack.count,
            self.stack.checks,
            self.stack.github_web_url,
            check_run_ids=self.stack.runs,
        )

    @cached_property
    def alerts(self) -> RegressionAlerts | None:
        from distkpi.services.alerts import RegressionAlerts

        if self.stack.alarms is None or self.stack.topic is None:
            return None
        return RegressionAlerts(
            self.stack.alarms,
            self.stack.topic,
            self.stack.report_url,
            self.stack.github_web_url,
            self.stack.count,
            owners=self.owners,
            chat=self.chat,
            ledger=self.ledger,
        )

    @cached_property
    def ledger(self) -> RegressionLedger:
        from distkpi.services.regressions import RegressionLedger

        return RegressionLedger(self.stack.regressions, self.stack.count, self.stack.clock)

    @cached_property
    def acceptances(self) -> Acceptances:
        from distkpi.services.accept import Acceptances

        return Acceptances(
            self.stack.runs,
            self.stack.history,
            self.stack.pull_requests,
            self.stack.github,
            self.statuses,
            self.stack.deliveries,
            self.ledger,
            self.stack.count,
            self.stack.clock,
            comments=self.pr_comments,
            store=self.stack.store,
        )

    @cached_property
    def owners(self) -> SuiteOwners:
        from distkpi.services.owners import SuiteOwners

        return SuiteOwners(self.stack.github, self.stack.catalog, self.stack.count)

    @cached_property
    def chat(self) -> ChatAlerts | None:
        from distkpi.services.chat import ChatAlerts

        if self.stack.chat is None:
            return None
        return ChatAlerts(
            self.stack.chat,
            self.stack.chat_quota,
            self.stack.chat_per_hour,
            self.stack.count,
            self.stack.clock,
        )

    @cached_property
    def pr_comments(self) -> PullRequestComments:
        from distkpi.services.pr_comments import PullRequestComments

        return PullRequestComments(
            self.stack.github,
            self.stack.comments,
            self.stack.catalog,
            self.stack.pull_requests,
            self.stack.report_url,
            self.stack.github_web_url,
            self.stack.count,
        )

    @cached_property
    def publisher(self) -> Publisher:
        from distkpi.services.diagnosis import Diagnoser
        from distkpi.services.publish import Publisher

        publisher = Publisher(
            self.stack.runs,
            self.stack.history,
            self.stack.store,
            self.statuses,
            self.stack.count,
            self.stack.clock,
            self.alerts,
            bisector=self.bisector,
            site=self.site,
            comments=self.pr_comments,
            # where jobs can be submitted, a regression's diagnosis job is started
            diagnose=self.starter.diagnose if self.stack.launcher is not None else None,
            diagnoser=Diagnoser(self.stack.store, self.stack.manifest_keys, self.stack.count),
        )
        if self.stack.draw is not None:
            publisher.draw = self.stack.draw
        return publisher

    @cached_property
    def bisector(self) -> Bisector | None:
        """How a publisher bisects a regression: only where jobs can be submitted, and the
        alarms (which keep the last passing commit) are kept."""
        from distkpi.services.bisect import Bisector

        alerts, bisections = self.alerts, self.stack.bisections
        if self.stack.launcher is None or alerts is None or bisections is None:
            return None
        return Bisector(
            self.stack.runs,
            bisections,
            alerts.alarms,
            self.stack.history,
            self.statuses,
            self.stack.catalog,
            self.starter.start_step,
            self.starter.cancel_step,
            alerts,
            count=self.stack.count,
            clock=self.stack.clock,
            diagnose_culprit=self.starter.diagnose_culprit,
            site=self.site,
        )

    @cached_property
    def finisher(self) -> RunFinisher:
        from distkpi.services.finish import RunFinisher

        return RunFinisher(
            self.stack.runs,
            self.stack.history,
            self.publisher,
            self.stack.clock,
            confirm=self.confirm,
        )

    @property
    def confirm(self) -> Callable[[RunRecord, Sequence[str]], str | None] | None:
        """How a finisher starts a confirmation run, where it may."""
        return self.starter.confirm if self.stack.confirms else None

    @cached_property
    def settler(self) -> ConfigSettler:
        from distkpi.services.settle import ConfigSettler

        return ConfigSettler(
            self.stack.runs,
            self.stack.jobs,
            self.stack.store,
            self.finisher,
            self.stack.manifest_keys,
            count=self.stack.count,
            statuses=self.statuses,
        )

    @cached_property
    def starter(self) -> RunStarter:
        return RunStarter(
            runs=self.stack.runs,
            deliveries=self.stack.deliveries,
            jobs=self.stack.jobs,
            pull_requests=self.stack.pull_requests,
            store=self.stack.store,
            catalog=self.stack.catalog,
            statuses=self.statuses,
            launcher=self.stack.launcher,
            keys=self.stack.manifest_keys,
            cancel_superseded=self.stack.cancel_superseded,
            settler=lambda: self.settler,
            fleet=self.stack.fleet,
            count=self.stack.count,
            clock=self.stack.clock,
        )

    @cached_property
    def job_starts(self) -> JobStarts:
        from distkpi.services.job_starts import JobStarts

        return JobStarts(self.stack.jobs, self.stack.runs, self.stack.count)

    @cached_property
    def looks(self) -> PairedLooks:
        from distkpi.services.looks import PairedLooks

        return PairedLooks(
            self.stack.runs,
            self.stack.history,
            self.stack.store,
            self.stack.manifest_keys,
            count=self.stack.count,
        )

    @cached_property
    def deadlines(self) -> RunDeadlines:
        from distkpi.services.deadlines import RunDeadlines

        return RunDeadlines(
            self.stack.runs,
            self.settler,
            self.stack.launcher,
            self.stack.run_timeout_s,
            self.stack.queue_wait_s,
            self.stack.count,
            self.stack.clock,
        )

    @cached_property
    def site(self) -> SitePublisher:
        from distkpi.services.site import SitePublisher

        return SitePublisher(
            self.stack.store,
            self.stack.history.resets,
            self.stack.count,
            self.stack.clock,
            regressions=self.stack.regressions.of_branch,
        )
