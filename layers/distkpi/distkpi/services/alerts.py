"""Default-branch alerts: a `failure` on a push to a configured branch publishes one
message per run to the stack's topic, unless every config it regressed was alarmed of
already and has not passed since (domain/github/alerts.py); a bisection of it that ended
publishes another, naming the culprit (domain/bisect/texts.py). A suite with
`alert: {pull_requests: true}` alerts of a pull request's regressions the same way (its
alarms kept under the pull request's history branch, `pr:<n>`). Each names the suite's
owners and a culprit's author, and goes to the chat too, after the topic (services/chat.py).
Each regression a push alerts on is kept as an item with a life (services/regressions.py),
fixed by a later run back in range."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.bisect.plan import Bisection
from distkpi.domain.bisect.texts import bisection_alert
from distkpi.domain.chat.notices import culprit_notice, regression_notice
from distkpi.domain.github.alerts import (
    Alerted,
    AlertMessage,
    alert_message,
    next_state,
    with_mentions,
)
from distkpi.domain.github.codeowners import mentions as as_mentions
from distkpi.domain.records import RunRecord
from distkpi.exceptions import StorageError
from distkpi.services.chat import ChatAlerts
from distkpi.services.owners import SuiteOwners
from distkpi.services.ports import Alarms, Counter, Topic, no_metrics
from distkpi.services.regressions import RegressionLedger

logger = Logger(child=True)


@dataclass
class RegressionAlerts:
    alarms: Alarms
    topic: Topic
    report_url: Callable[[str], str | None]
    web_url: str = "https://github.com"
    count: Counter = no_metrics
    # who alerts mention, and which suites alert of pull requests (None: nobody, none)
    owners: SuiteOwners | None = None
    chat: ChatAlerts | None = None  # a stack with a chat webhook
    # where the regressions alerted on are kept as items; None: nowhere
    ledger: RegressionLedger | None = None

    def after(self, run: RunRecord) -> bool:
        """Alarm of the run's new regressions; True when a message went out. Its alarm
        state is kept only once the message is out, so a failed publish is retried with
        the run's publication (the chat is told once the topic took it). A push's run fixes
        the branch's open regressions it brings back in range, and stores each new one,
        `open`."""
        evaluation, trigger = run.evaluation, run.trigger
        if evaluation is None or not self._alerts_of(run):
            return False
        branch = trigger.branch if trigger.of_branch else run.history_branch
        ledger = self.ledger if trigger.of_branch else None  # the branch's items
        if ledger is not None:
            ledger.check_fixed(run)
        before = self.alarms.get(trigger.repo, branch, run.model)
        after, new = next_state(before, evaluation, trigger.sha)
        if new:
            alerted = Alerted(trigger.repo, branch, run.model, trigger.sha)
            mentions = self.owners.of(trigger.repo, trigger.sha, run.model) if self.owners else ()
            report = self.report_url(run.run_id)
            message = alert_message(
                evaluation,
                alerted,
                new,
                last_pass_sha=before.last_pass_sha,
                web_url=self.web_url,
                report_url=report,
            )
            self._publish(with_mentions(message, mentions), run.run_id)
            logger.info("regression alert published", run_id=run.run_id, configs=sorted(new))
            if ledger is not None:
                ledger.opened(run, new)
            if self.chat is not None:
                number = trigger.pull_request if trigger.event == "pull_request" else None
                self.chat.send(
                    regression_notice(
                        evaluation,
                        alerted,
                        mentions,
                        web_url=self.web_url,
                        report_url=report,
                        pull_request=number,
                    )
                )
        if after != before:
            self.alarms.put(trigger.repo, branch, run.model, after)
        return bool(new)

    def _alerts_of(self, run: RunRecord) -> bool:
        """A push's (or the schedule's) run; a pull request's when its suite asks
        (`alert: pull_requests`)."""
        if run.trigger.of_branch:
            return True
        if run.trigger.event != "pull_request" or self.owners is None:
            return False
        return self.owners.alerting(run.model).pull_requests

    def _publish(self, message: AlertMessage, run_id: str) -> None:
        try:
            self.topic.publish(message.subject, message.body)
        except StorageError:
            logger.exception("alert not published", run_id=run_id)
            self.count("AlertFailures")
            raise
        self.count("AlertsPublished")

    def bisected(self, bisection: Bisection) -> None:
        """The regression's alert again, now with how its bisection ended; a topic that
        refuses is logged and counted (the bisection's end stays stored). Its regressions
        learn the culprit first."""
        if self.ledger is not None:
            self.ledger.bisected(bisection)
        b = bisection
        mentions = self.owners.of(b.repo, b.bad, b.model) if self.owners else ()
        culprit = b.commit(b.culprit) if b.culprit else None
        author = as_mentions([culprit.login]) if culprit is not None and culprit.login else ()
        report = self.report_url(b.bad_run_id)
        message = bisection_alert(
            b, web_url=self.web_url, report_url=self.report_url, run_report=report
        )
        try:
            self._publish(with_mentions(message, (*mentions, *author)), b.bad_run_id)
        except StorageError:
            return
        logger.info("bisection alert published", run_id=b.bad_run_id)
        if self.chat is not None:
            self.chat.send(culprit_notice(b, mentions, web_url=self.web_url, report_url=report))

    def diagnosed(self, run: RunRecord, lines: list[str]) -> None:
        """A push's regression's alert again, with its diagnosis; a topic that refuses is
        logged and counted (the diagnosis stays stored with the run)."""
        if not run.trigger.of_branch or not lines:
            return
        from distkpi.domain.github.diagnosis_texts import diagnosis_alert

        t = run.trigger
        subject, body = diagnosis_alert(
            run.model, (t.repo, t.branch, t.sha), lines, self.report_url(run.run_id)
        )
        try:
            self._publish(AlertMessage(subject, body), run.run_id)
        except StorageError:
            return
        logger.info("diagnosis alert published", run_id=run.run_id)
