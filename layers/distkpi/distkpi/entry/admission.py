"""What a delivery asks for, decided the same way by the webhook (to answer GitHub at
once, and queue only what may start runs) and by the launcher (which starts them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from distkpi.domain.github.acceptance import AcceptAsked, Merged
from distkpi.domain.github.events import GitHubEvent, PullRequestEvent
from distkpi.domain.github.trust import NeedsApproval, admit, trust_of
from distkpi.domain.github.webhook import (
    RERUN_EVENTS,
    Calibrate,
    Ignored,
    Invalid,
    Rerun,
    Trigger,
    decide,
)
from distkpi.entry.observability import count, logger
from distkpi.settings import AdmissionSettings

Decision = Trigger | Rerun | Calibrate | AcceptAsked | Merged | Ignored | Invalid | NeedsApproval


@dataclass(frozen=True)
class Answer:
    """What a delivery is answered: the webhook's HTTP reply, or what the launcher logs
    and returns for it."""

    status: HTTPStatus
    body: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status.value, "answer": self.body}


def reply(status: HTTPStatus, **body: Any) -> Answer:
    return Answer(status, body)


def decide_delivery(
    settings: AdmissionSettings, app_id: Callable[[], str | None], name: str, event: GitHubEvent
) -> Decision:
    """What the delivery asks for; whether its repository may start runs at all (a push, a
    re-run, a calibration, an accept and a merge as much as a pull request), and for a pull
    request whether it may run now."""
    decided = decide(event, settings.branches, app_id() if name in RERUN_EVENTS else None)
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


def nothing_to_start(decision: Ignored | Invalid) -> Answer:
    if isinstance(decision, Invalid):
        logger.warning(
            "delivery not what GitHub sends", field=decision.field, reason=decision.reason
        )
        return reply(HTTPStatus.BAD_REQUEST, message=str(decision), field=decision.field)
    logger.info("delivery ignored", reason=decision.reason)
    return reply(HTTPStatus.ACCEPTED, message=f"ignored: {decision.reason}")
