"""The webhook's HTTP decisions: size, signature, JSON, event; then start the runs."""

from __future__ import annotations

import base64
import binascii
import json
import time
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response

from distkpi.domain.github.acceptance import AcceptAsked, Merged
from distkpi.domain.github.events import GitHubEvent, PullRequestEvent
from distkpi.domain.github.report_links import link_problem, malformed
from distkpi.domain.github.trust import NeedsApproval, admit, trust_of
from distkpi.domain.github.webhook import (
    RERUN_EVENTS,
    Calibrate,
    Ignored,
    Invalid,
    Rerun,
    Trigger,
    decide,
    parse,
    signature_matches,
)
from distkpi.domain.layout import report_key
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import WebhookWiring, webhook
from distkpi.services.launch import Delivery, Outcome

MAX_BODY_BYTES = 1024 * 1024
REPORT_URL_S = 300  # a presigned report URL lives minutes: the signed link is what lasts

app = LambdaFunctionUrlResolver()


def _reply(status: HTTPStatus, **body: Any) -> Response[str]:
    return Response(
        status_code=status.value, content_type="application/json", body=json.dumps(body)
    )


def _raw_body() -> bytes | None:
    event = app.current_event
    body = event.body or ""
    if not event.is_base64_encoded:
        return body.encode()
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None


def _header(name: str) -> str | None:
    return app.current_event.headers.get(name.lower()) or app.current_event.headers.get(name)


@app.get("/reports/<run_id>")
def report(run_id: str) -> Response[str]:
    """A report link from a check or status: a fresh presigned URL of the report, after
    checking the link's signature and expiry (domain/github/report_links.py)."""
    query = app.current_event.query_string_parameters or {}
    shape = malformed(run_id, query.get("exp"), query.get("sig"))
    if shape is not None:
        logger.warning("report link refused", reason=shape)
        return _reply(HTTPStatus.FORBIDDEN, message=shape)
    wired = _wiring()
    if wired.settings.report_link_secret_id is None:
        return _reply(HTTPStatus.NOT_FOUND, message="this stack signs no report links")
    problem = link_problem(
        wired.report_link_key(), run_id, query.get("exp"), query.get("sig"), time.time()
    )
    if problem is not None:
        logger.warning("report link refused", run_id=run_id, reason=problem)
        return _reply(HTTPStatus.FORBIDDEN, message=problem)
    url = wired.store.presigned_url(report_key(run_id), expires_s=REPORT_URL_S)
    return Response(status_code=HTTPStatus.FOUND.value, headers={"Location": url}, body="")


def _wiring() -> WebhookWiring:
    """The container's wiring; its report links point at the Function URL serving it."""
    return webhook(f"https://{app.current_event.request_context.domain_name}")


@app.post("/")
def receive() -> Response[str]:
    wired = _wiring()
    if (budget := wired.github_budget) is not None:
        budget.start()
    body = _raw_body()
    if body is None:
        return _reply(HTTPStatus.BAD_REQUEST, message="body is not valid base64")
    if len(body) > MAX_BODY_BYTES:
        return _reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, message="body over 1 MiB")
    if not signature_matches(wired.webhook_secret(), body, _header("X-Hub-Signature-256")):
        logger.warning("webhook signature missing or wrong")
        count("SignatureRejected")
        return _reply(HTTPStatus.UNAUTHORIZED, message="signature missing or wrong")
    payload = _payload(body)
    if isinstance(payload, Response):
        return payload
    event, delivery = _header("X-GitHub-Event") or "", _header("X-GitHub-Delivery") or ""
    logger.append_keys(delivery=delivery, github_event=event)
    return _dispatch(wired, event, delivery, parse(event, payload))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _payload(body: bytes) -> dict[str, Any] | Response[str]:
    """The delivery's JSON object, or the 400 that says why there is none."""
    try:
        payload = json.loads(body, parse_constant=_no_constant)
    except ValueError as exc:
        return _reply(HTTPStatus.BAD_REQUEST, message=f"body is not JSON: {exc}")
    except RecursionError:
        return _reply(HTTPStatus.BAD_REQUEST, message="body is not JSON: nested too deeply")
    if not isinstance(payload, dict):
        return _reply(HTTPStatus.BAD_REQUEST, message="body is not a JSON object")
    return payload


def _dispatch(wired: WebhookWiring, name: str, delivery: str, event: GitHubEvent) -> Response[str]:
    if name == "ping":
        return _reply(HTTPStatus.OK, message="pong")
    decided = _decide(wired, name, event)
    if isinstance(decided, AcceptAsked | Merged):
        return _acceptance(wired, decided, delivery, event.installation_id)
    if not isinstance(decided, Trigger | Rerun | Calibrate):
        return _nothing_started(wired, decided)
    if not delivery:
        return _reply(HTTPStatus.BAD_REQUEST, message="X-GitHub-Delivery header missing")
    trigger = decided if isinstance(decided, Trigger) else decided.trigger
    logger.append_keys(sha=trigger.sha)
    _remember_installation(wired, trigger.repo, event.installation_id)
    # a claim on the delivery lasts as long as this invocation may (killed at its timeout,
    # GitHub's redelivery takes over), its answer a week
    wired.deliveries.expire_with(app.lambda_context)
    if isinstance(decided, Calibrate):
        return _calibration(wired, decided, delivery)
    return _started(wired, decided, delivery)


def _acceptance(
    wired: WebhookWiring, decided: AcceptAsked | Merged, delivery: str, installation: int | None
) -> Response[str]:
    """An accept asked (once per delivery), or a merge that may start a new baseline."""
    if isinstance(decided, Merged):
        merged = wired.acceptances.merged(decided)
        return _reply(HTTPStatus.OK, message="merged", new_baseline_of=merged)
    if not delivery:
        return _reply(HTTPStatus.BAD_REQUEST, message="X-GitHub-Delivery header missing")
    _remember_installation(wired, decided.repo, installation)
    wired.deliveries.expire_with(app.lambda_context)
    answer = wired.acceptances.asked(decided, delivery)
    if answer.duplicate:
        return _reply(HTTPStatus.OK, message="duplicate delivery", accepted=[])
    if answer.refused is not None:
        return _reply(HTTPStatus.ACCEPTED, message=answer.refused, accepted=[])
    return _reply(HTTPStatus.OK, message="accepted", accepted=list(answer.accepted))


def _started(wired: WebhookWiring, decided: Trigger | Rerun, delivery: str) -> Response[str]:
    if isinstance(decided, Rerun):
        handled = wired.starter.rerun(decided, delivery)
    else:
        handled = wired.starter.handle_delivery(decided, delivery)
        if decided.event == "push":  # a fast-forward of an accepted head starts its level
            wired.acceptances.pushed(decided)
    if handled.outcome is Outcome.DUPLICATE:
        return _reply(HTTPStatus.OK, message="duplicate delivery", runs=[])
    if not handled.runs and (handled.refused_for or handled.never_admitted):
        return _rerun_refused(handled)
    return _reply(
        HTTPStatus.CREATED,
        message="runs started",
        runs=handled.runs,
        invalid_suites=handled.invalid_suites,
    )


def _calibration(wired: WebhookWiring, asked: Calibrate, delivery: str) -> Response[str]:
    handled = wired.starter.calibrate(asked, delivery)
    if handled.outcome is Outcome.DUPLICATE:
        return _reply(HTTPStatus.OK, message="duplicate delivery", runs=[])
    if handled.refused is not None:
        return _reply(HTTPStatus.UNPROCESSABLE_ENTITY, message=handled.refused, runs=[])
    return _reply(HTTPStatus.CREATED, message="calibration started", runs=handled.runs)


def _rerun_refused(handled: Delivery) -> Response[str]:
    if handled.refused_for:
        return _reply(
            HTTPStatus.ACCEPTED,
            message="re-run refused: a run of this commit is still going",
            runs=[],
            still_going=handled.refused_for,
        )
    return _reply(
        HTTPStatus.ACCEPTED,
        message="re-run refused: no delivery admitted for this commit ran these suites",
        runs=[],
        never_admitted=handled.never_admitted,
    )


def _remember_installation(wired: WebhookWiring, repo: str, installation: int | None) -> None:
    """With a GitHub App, each delivery says which installation acts on its repository."""
    auth = wired.app_auth
    if auth is not None and installation is not None:
        auth.remember(repo, installation)


def _decide(
    wired: WebhookWiring, name: str, event: GitHubEvent
) -> Trigger | Rerun | Calibrate | AcceptAsked | Merged | Ignored | Invalid | NeedsApproval:
    """What the delivery asks for; whether its repository may start runs at all (a push, a
    re-run, a calibration and an accept as much as a pull request), and for a pull request
    whether it may run now."""
    settings = wired.settings
    app_id = wired.app_id() if name in RERUN_EVENTS else None
    decided = decide(event, settings.branches, app_id)
    if isinstance(decided, Trigger | Rerun | Calibrate | AcceptAsked | Merged):
        repo = decided.trigger.repo if isinstance(decided, Rerun | Calibrate) else decided.repo
        refused = settings.allowed.refusal(repo, event.installation_id)
        if refused is not None:
            logger.warning("repository not allowed", repo=repo, reason=refused.reason)
            count("RepositoryRefused")
            return refused
    if isinstance(decided, Trigger) and isinstance(event, PullRequestEvent):
        admitted = admit(decided, event, settings.trust)
        if isinstance(admitted, Trigger):
            trust = trust_of(event, settings.trust)
            why = trust.trusted_because or "approved with the label"
            logger.info(
                "pull request admitted",
                reason=why,
                actor=trust.actor,
                actor_permission=trust.actor_permission.value,
            )
        return admitted
    return decided


def _nothing_started(
    wired: WebhookWiring, decision: Ignored | Invalid | NeedsApproval
) -> Response[str]:
    if isinstance(decision, NeedsApproval):
        suites = wired.starter.await_approval(decision, wired.settings.approval_label)
        return _reply(
            HTTPStatus.ACCEPTED, message=f"awaiting approval: {decision.reason}", suites=suites
        )
    if isinstance(decision, Invalid):
        logger.warning(
            "delivery not what GitHub sends", field=decision.field, reason=decision.reason
        )
        return _reply(HTTPStatus.BAD_REQUEST, message=str(decision), field=decision.field)
    logger.info("delivery ignored", reason=decision.reason)
    return _reply(HTTPStatus.ACCEPTED, message=f"ignored: {decision.reason}")
