"""The launcher behind the delivery queue: each queued delivery read back, decided again
and started (its runs planned, recorded and their jobs submitted at the pace Batch takes),
done once under the delivery's claim. A delivery that raises is given back to SQS, which
gives it again after its visibility timeout (the claim expired with the invocation that
made it, so the runs resume with the configs never submitted) and, after the queue's
maxReceiveCount, to its dead-letter queue."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from distkpi.domain.github.acceptance import AcceptAsked, Merged
from distkpi.domain.github.deliveries import QueuedDelivery, is_schedule
from distkpi.domain.github.trust import NeedsApproval
from distkpi.domain.github.webhook import Calibrate, Ignored, Invalid, Rerun, Trigger, parse
from distkpi.entry.admission import Answer, decide_delivery, nothing_to_start, reply
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import LauncherWiring, launcher
from distkpi.exceptions import DeliveryInProgressError
from distkpi.services.launch import Delivery, Outcome
from distkpi.services.schedule import SCHEDULE

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


def handle_messages(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Each SQS record's delivery started; the records that failed, for SQS to give again
    (ReportBatchItemFailures), and each started delivery's answer."""
    failures: list[dict[str, str]] = []
    answers: list[dict[str, Any]] = []
    for record in event.get("Records", []):
        message_id = str(record.get("messageId", ""))
        try:
            if is_schedule(str(record.get("body", ""))):
                answers.append(scheduled(launcher(), context))
                continue
            queued = QueuedDelivery.from_message(str(record.get("body", "")))
            logger.append_keys(delivery=queued.delivery, github_event=queued.event)
            answer = launch(launcher(), queued, context)
        except Exception:  # one delivery's failure must not hold up the others of the batch
            logger.exception("delivery not started; SQS gives it again", message_id=message_id)
            count("DeliveriesRetried")
            failures.append({"itemIdentifier": message_id})
            continue
        logger.debug("delivery started", status=answer.status.value, answer=answer.body)
        answers.append({"delivery": queued.delivery, **answer.to_json()})
    return {"batchItemFailures": failures, "deliveries": answers}


def scheduled(wired: LauncherWiring, context: LambdaContext) -> dict[str, Any]:
    """The schedule: each listed repository's default branch head measured by the suites
    that run on `schedule`, each head once (its claim lasts this invocation, as a
    delivery's); a head GitHub could not tell makes SQS give the schedule again."""
    if (budget := wired.github_budget) is not None:
        budget.start()
    wired.deliveries.expire_with(context)
    started = wired.schedule.start(wired.settings.allowed_repositories)
    runs = [run for of_repo in started.values() for run in of_repo]
    answer = reply(HTTPStatus.CREATED, message="schedule", runs=runs, repositories=started)
    return {"delivery": SCHEDULE, **answer.to_json()}


def launch(wired: LauncherWiring, queued: QueuedDelivery, context: LambdaContext) -> Answer:
    """A queued delivery decided again (the settings may have changed since it was queued)
    and started, as the webhook once did inside GitHub's 10 s."""
    if (budget := wired.github_budget) is not None:
        budget.start()
    raw = wired.store.read_bytes(queued.key) if queued.key is not None else queued.body or ""
    payload = json.loads(raw)
    event = parse(queued.event, payload)
    decided = decide_delivery(wired.settings, wired.app_id, queued.event, event)
    if isinstance(decided, NeedsApproval):
        suites = wired.starter.await_approval(decided, wired.settings.approval_label)
        return reply(
            HTTPStatus.ACCEPTED, message=f"awaiting approval: {decided.reason}", suites=suites
        )
    if isinstance(decided, Ignored | Invalid):
        return nothing_to_start(decided)
    if isinstance(decided, AcceptAsked | Merged):
        return _acceptance(wired, decided, queued.delivery, event.installation_id, context)
    trigger = decided if isinstance(decided, Trigger) else decided.trigger
    logger.append_keys(sha=trigger.sha)
    auth = wired.app_auth
    if auth is not None and event.installation_id is not None:
        auth.remember(trigger.repo, event.installation_id)
    # the claim on starting the delivery lasts as long as this invocation may: killed at its
    # timeout, SQS's next delivery of the message takes over and submits what this did not
    wired.deliveries.expire_with(context)
    if isinstance(decided, Calibrate):
        return _calibration(wired, decided, queued.delivery)
    return _started(wired, decided, queued.delivery)


def _acceptance(
    wired: LauncherWiring,
    decided: AcceptAsked | Merged,
    delivery: str,
    installation: int | None,
    context: LambdaContext,
) -> Answer:
    """An accept asked (once per delivery), or a merge that may start a new baseline."""
    if isinstance(decided, Merged):
        merged = wired.acceptances.merged(decided)
        return reply(HTTPStatus.OK, message="merged", new_baseline_of=merged)
    auth = wired.app_auth
    if auth is not None and installation is not None:
        auth.remember(decided.repo, installation)
    wired.deliveries.expire_with(context)
    answer = wired.acceptances.asked(decided, delivery)
    if answer.duplicate:
        return reply(HTTPStatus.OK, message="duplicate delivery", accepted=[])
    if answer.refused is not None:
        return reply(HTTPStatus.ACCEPTED, message=answer.refused, accepted=[])
    return reply(HTTPStatus.OK, message="accepted", accepted=list(answer.accepted))


def _started(wired: LauncherWiring, decided: Trigger | Rerun, delivery: str) -> Answer:
    if isinstance(decided, Rerun):
        handled = wired.starter.rerun(decided, delivery)
    else:
        handled = wired.starter.handle_delivery(decided, delivery)
        if decided.event == "push":  # a fast-forward of an accepted head starts its level
            wired.acceptances.pushed(decided)
    if handled.outcome is Outcome.DUPLICATE:
        return _duplicate(handled)
    if not handled.runs and (handled.refused_for or handled.never_admitted):
        return _rerun_refused(handled)
    return reply(
        HTTPStatus.CREATED,
        message="runs started",
        runs=handled.runs,
        invalid_suites=handled.invalid_suites,
    )


def _calibration(wired: LauncherWiring, asked: Calibrate, delivery: str) -> Answer:
    handled = wired.starter.calibrate(asked, delivery)
    if handled.outcome is Outcome.DUPLICATE:
        return _duplicate(handled)
    if handled.refused is not None:
        return reply(HTTPStatus.UNPROCESSABLE_ENTITY, message=handled.refused, runs=[])
    return reply(HTTPStatus.CREATED, message="calibration started", runs=handled.runs)


def _duplicate(handled: Delivery) -> Answer:
    """A delivery started before is done; one another invocation is starting now is given
    back to SQS (that invocation may die: its claim expires with it, and the message's next
    delivery takes over)."""
    if handled.stored is None:
        raise DeliveryInProgressError("delivery being started by another invocation")
    return reply(HTTPStatus.OK, message="duplicate delivery", runs=[])


def _rerun_refused(handled: Delivery) -> Answer:
    if handled.refused_for:
        return reply(
            HTTPStatus.ACCEPTED,
            message="re-run refused: a run of this commit is still going",
            runs=[],
            still_going=handled.refused_for,
        )
    return reply(
        HTTPStatus.ACCEPTED,
        message="re-run refused: no delivery admitted for this commit ran these suites",
        runs=[],
        never_admitted=handled.never_admitted,
    )
