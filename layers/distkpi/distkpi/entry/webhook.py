"""The webhook's HTTP decisions: size, signature, JSON, event; then start the runs."""

from __future__ import annotations

import base64
import binascii
import json
import time
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response

from distkpi.domain.webhook import Ignored, Invalid, Trigger, decide, signature_matches
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import wiring

MAX_BODY_BYTES = 1024 * 1024

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


@app.post("/")
def receive() -> Response[str]:
    if (budget := wiring().github_budget) is not None:
        budget.start()
    body = _raw_body()
    if body is None:
        return _reply(HTTPStatus.BAD_REQUEST, message="body is not valid base64")
    if len(body) > MAX_BODY_BYTES:
        return _reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, message="body over 1 MiB")
    if not signature_matches(wiring().webhook_secret(), body, _header("X-Hub-Signature-256")):
        logger.warning("webhook signature missing or wrong")
        count("SignatureRejected")
        return _reply(HTTPStatus.UNAUTHORIZED, message="signature missing or wrong")
    payload = _payload(body)
    if isinstance(payload, Response):
        return payload
    event, delivery = _header("X-GitHub-Event") or "", _header("X-GitHub-Delivery") or ""
    logger.append_keys(delivery=delivery, github_event=event)
    return _dispatch(event, delivery, payload)


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


def _dispatch(event: str, delivery: str, payload: dict[str, Any]) -> Response[str]:
    if event == "ping":
        return _reply(HTTPStatus.OK, message="pong")
    trigger = decide(event, payload, wiring().settings.branches)
    if isinstance(trigger, Invalid):
        logger.warning("delivery not what GitHub sends", field=trigger.field, reason=trigger.reason)
        return _reply(HTTPStatus.BAD_REQUEST, message=str(trigger), field=trigger.field)
    if isinstance(trigger, Ignored):
        logger.info("delivery ignored", reason=trigger.reason)
        return _reply(HTTPStatus.ACCEPTED, message=f"ignored: {trigger.reason}")
    if not delivery:
        return _reply(HTTPStatus.BAD_REQUEST, message="X-GitHub-Delivery header missing")
    logger.append_keys(sha=trigger.sha)
    runs = wiring().runs
    if not runs.claim_delivery(delivery, int(time.time())):
        logger.info("delivery seen before; nothing started")
        return _reply(HTTPStatus.OK, message="duplicate delivery", runs=[])
    starter = wiring().starter
    try:
        suites, broken = wiring().suites()
        started = starter.start_runs(trigger, delivery, suites)
    except Exception:
        runs.release_delivery(delivery)  # let GitHub's redelivery try again
        raise
    starter.report_broken(trigger, broken)
    if wiring().settings.cancel_superseded:
        _supersede(trigger, [s.name for s in suites])
    return _reply(
        HTTPStatus.CREATED,
        message="runs started",
        runs=started,
        invalid_suites=[s.name for s in broken],
    )


def _supersede(trigger: Trigger, models: list[str]) -> None:
    """The new runs have started whatever happens here, so a failure is logged, not raised."""
    try:
        wiring().starter.supersede(trigger, models)
    except Exception:
        logger.exception("superseded runs not cancelled")
        count("SupersedeFailures")
