"""Default-branch alerts: a `failure` on a push to a configured branch publishes one
message per run to the stack's topic, unless every config it regressed was alarmed of
already and has not passed since (domain/github/alerts.py); a bisection of it that ended
publishes another, naming the culprit (domain/bisect/texts.py). Each regression alerted on
is kept as an item with a life (services/regressions.py), fixed by a later run back in range."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.bisect.plan import Bisection
from distkpi.domain.bisect.texts import bisection_alert
from distkpi.domain.github.alerts import Alerted, alert_message, next_state
from distkpi.domain.records import RunRecord
from distkpi.exceptions import StorageError
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
    # where the regressions alerted on are kept as items; None: nowhere
    ledger: RegressionLedger | None = None

    def after(self, run: RunRecord) -> bool:
        """Alarm of the run's new regressions; True when a message went out. Its alarm
        state is kept only once the message is out, so a failed publish is retried with
        the run's publication. The branch's open regressions it brings back in range are
        fixed; each new one is stored, `open`."""
        evaluation, trigger = run.evaluation, run.trigger
        if evaluation is None or trigger.event != "push":
            return False
        if self.ledger is not None:
            self.ledger.check_fixed(run)
        before = self.alarms.get(trigger.repo, trigger.branch, run.model)
        after, new = next_state(before, evaluation, trigger.sha)
        if new:
            message = alert_message(
                evaluation,
                Alerted(trigger.repo, trigger.branch, run.model, trigger.sha),
                new,
                last_pass_sha=before.last_pass_sha,
                web_url=self.web_url,
                report_url=self.report_url(run.run_id),
            )
            try:
                self.topic.publish(message.subject, message.body)
            except StorageError:
                logger.exception("alert not published", run_id=run.run_id)
                self.count("AlertFailures")
                raise
            self.count("AlertsPublished")
            logger.info("regression alert published", run_id=run.run_id, configs=sorted(new))
            if self.ledger is not None:
                self.ledger.opened(run, new)
        if after != before:
            self.alarms.put(trigger.repo, trigger.branch, run.model, after)
        return bool(new)

    def bisected(self, bisection: Bisection) -> None:
        """The regression's alert again, now with how its bisection ended; a topic that
        refuses is logged and counted (the bisection's end stays stored). Its regressions
        learn the culprit first."""
        if self.ledger is not None:
            self.ledger.bisected(bisection)
        message = bisection_alert(
            bisection,
            web_url=self.web_url,
            report_url=self.report_url,
            run_report=self.report_url(bisection.bad_run_id),
        )
        try:
            self.topic.publish(message.subject, message.body)
        except StorageError:
            logger.exception("bisection alert not published", run_id=bisection.bad_run_id)
            self.count("AlertFailures")
            return
        self.count("AlertsPublished")
        logger.info("bisection alert published", run_id=bisection.bad_run_id)
