"""The webhook's HTTP decisions: size, signature, JSON, event; then a delivery that may
start runs is claimed, recorded and queued for the launcher (entry/launcher.py), and GitHub
answered at once: nothing here submits a job or calls GitHub."""

from __future__ import annotations

import base64
import binascii
import json
import time
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response

from distkpi.domain.github.events import GitHubEvent
from distkpi.domain.github.report_links import link_problem, malformed
from distkpi.domain.github.webhook import (
    Calibrate,
    Ignored,
    Invalid,
    Rerun,
    Trigger,
    parse,
    signature_matches,
)
from distkpi.domain.layout import report_key
from distkpi.entry.admission import Answer, decide_delivery, nothing_to_start
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import WebhookWiring, webhook

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
    return _dispatch(wired, event, delivery, parse(event, payload), body)


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


def _dispatch(
    wired: WebhookWiring, name: str, delivery: str, event: GitHubEvent, body: bytes
) -> Response[str]:
    """Answered here: a ping, what starts nothing, what is not what GitHub sends. Queued for
    the launcher: whatever may start runs or post statuses (a pull request awaiting approval,
    an accept asked and a merge included), once per delivery id."""
    if name == "ping":
        return _reply(HTTPStatus.OK, message="pong")
    decided = decide_delivery(wired.settings, wired.app_id, name, event)
    if isinstance(decided, Ignored | Invalid):
        return _answer(nothing_to_start(decided))
    if not delivery:
        return _reply(HTTPStatus.BAD_REQUEST, message="X-GitHub-Delivery header missing")
    if isinstance(decided, Trigger | Rerun | Calibrate):
        trigger = decided if isinstance(decided, Trigger) else decided.trigger
        logger.append_keys(sha=trigger.sha)
    # a claim on queuing lasts as long as this invocation may (killed at its timeout,
    # GitHub's redelivery queues it), its answer a week
    wired.deliveries.expire_with(app.lambda_context)
    if not wired.intake.accept(delivery, name, body):
        return _reply(HTTPStatus.OK, message="duplicate delivery", runs=[])
    return _reply(HTTPStatus.ACCEPTED, message="delivery queued", delivery=delivery)


def _answer(answer: Answer) -> Response[str]:
    return _reply(answer.status, **answer.body)
