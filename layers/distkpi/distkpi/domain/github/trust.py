"""Who may start runs on the GPU fleet: decided from a pull_request delivery alone.

A pull request from the base repository itself, or by an author whose `author_association`
the stack trusts, runs at once. Any other waits until someone with triage rights adds the
approval label; that approval holds for the head it was given to, so a later push needs it
again (the label, still on the pull request, is then stale and is removed). Drafts start
nothing until they are ready for review, unless the stack runs them. Pushes to a configured
branch come from people who may write to it and are not gated here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from distkpi.domain.github.webhook import Ignored, Trigger, dig

DEFAULT_TRUSTED = ("OWNER", "MEMBER", "COLLABORATOR")


@dataclass(frozen=True)
class TrustSettings:
    trusted_associations: Collection[str] = DEFAULT_TRUSTED
    approval_label: str = "ok-to-test"
    run_drafts: bool = False


@dataclass(frozen=True)
class NeedsApproval:
    """A pull request nobody trusted has approved for this head: nothing runs yet."""

    trigger: Trigger
    reason: str
    stale_label: bool  # the approval label is still on it, given to an earlier head


def _labels(payload: Mapping[str, Any]) -> set[str]:
    labels = dig(payload, "pull_request", "labels")
    if not isinstance(labels, list):
        return set()
    return {label["name"] for label in labels if isinstance(label, dict) and "name" in label}


def trusted_because(payload: Mapping[str, Any], settings: TrustSettings) -> str | None:
    """Why the pull request's author may run on the fleet unapproved, or None."""
    head = dig(payload, "pull_request", "head", "repo", "full_name")
    if head is not None and head == dig(payload, "repository", "full_name"):
        return "from the base repository"
    association = dig(payload, "pull_request", "author_association")
    if association in settings.trusted_associations:
        return f"author is {association}"
    return None


def admit(
    trigger: Trigger, payload: Mapping[str, Any], settings: TrustSettings
) -> Trigger | NeedsApproval | Ignored:
    """Whether a pull_request delivery (one that names a head) starts its runs now."""
    action = payload.get("action")
    if dig(payload, "pull_request", "draft") is True and not settings.run_drafts:
        return Ignored("draft: its runs start when it is ready for review")
    trusted = trusted_because(payload, settings)
    if action == "labeled":
        if dig(payload, "label", "name") != settings.approval_label:
            return Ignored(f"label {dig(payload, 'label', 'name')!r} starts nothing")
        if trusted is not None:
            return Ignored(f"approval label on a trusted pull request ({trusted}): nothing new")
        return trigger  # approved by someone who may add labels, for this head
    if trusted is not None:
        return trigger
    association = dig(payload, "pull_request", "author_association") or "unknown"
    reason = f"from a fork by an author who is {association}"
    return NeedsApproval(trigger, reason, settings.approval_label in _labels(payload))


def approval_description(label: str) -> str:
    return f"needs approval: a maintainer adds the label {label}"
