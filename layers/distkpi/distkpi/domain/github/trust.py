"""Who may start runs on the GPU fleet.

First the stack's own list: only a repository it names (`AllowedRepositories`), or one
that a GitHub App installation it names acts for (`AllowedInstallations`), starts anything;
an empty list starts nothing, since anyone can add the webhook to a repository of theirs or
install a public App. That holds for pushes and re-runs as for pull requests.

Then, for a pull request, from its delivery alone: a pull request from the base repository
itself, or by an author whose `author_association` the stack trusts, runs at once. Any other
waits until someone with triage rights adds the approval label; that approval holds for the
head it was given to, so a later push needs it again (the label, still on the pull request,
is then stale and is removed). Drafts start nothing until they are ready for review, unless
the stack runs them. Pushes to a configured branch come from people who may write to it
and are not gated further. A re-run repeats a run that was admitted, with its trigger
(services/launch.RunStarter.rerun).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

from distkpi.domain.github.events import PullRequestEvent
from distkpi.domain.github.webhook import Ignored, Trigger

DEFAULT_TRUSTED = ("OWNER", "MEMBER", "COLLABORATOR")


@dataclass(frozen=True)
class TrustSettings:
    trusted_associations: Collection[str] = DEFAULT_TRUSTED
    approval_label: str = "ok-to-test"
    run_drafts: bool = False


@dataclass(frozen=True)
class AllowedSources:
    """The repositories (owner/name, as GitHub compares them: ignoring case) and the App
    installations whose deliveries may start runs; empty: none may."""

    repositories: Collection[str] = ()
    installations: Collection[int] = ()

    def refusal(self, repo: str, installation: int | None) -> Ignored | None:
        """Why a delivery for ``repo`` (by the App ``installation``, if any) starts nothing,
        or None when the stack allows it."""
        if repo.lower() in {r.lower() for r in self.repositories}:
            return None
        if installation is not None and installation in self.installations:
            return None
        if not self.repositories and not self.installations:
            return Ignored(f"repository {repo}: this stack allows no repository to start runs")
        return Ignored(f"repository {repo} is not allowed to start runs on this stack")


@dataclass(frozen=True)
class NeedsApproval:
    """A pull request nobody trusted has approved for this head: nothing runs yet."""

    trigger: Trigger
    reason: str
    stale_label: bool  # the approval label is still on it, given to an earlier head


class Permission(Enum):
    """What the delivery itself shows the actor may do on the repository (GitHub's roles:
    read < triage < write < maintain < admin); UNKNOWN where it shows nothing."""

    UNKNOWN = "unknown"
    TRIAGE = "triage"  # GitHub lets only triage and above add labels


@dataclass(frozen=True)
class Trust:
    """Who a pull_request delivery is from: the author's trust, the actor's permission."""

    author_association: str | None
    trusted_because: str | None  # why the author runs unapproved, or None
    actor: str | None
    actor_permission: Permission


def trust_of(event: PullRequestEvent, settings: TrustSettings) -> Trust:
    pull = event.pull_request
    association = pull.author_association if pull else None
    head_repo = pull.head.repo.full_name if pull and pull.head and pull.head.repo else None
    because = None
    if head_repo is not None and head_repo == event.repo:
        because = "from the base repository"
    elif association in settings.trusted_associations:
        because = f"author is {association}"
    permission = Permission.TRIAGE if event.action == "labeled" else Permission.UNKNOWN
    return Trust(association, because, event.actor, permission)


def trusted_because(event: PullRequestEvent, settings: TrustSettings) -> str | None:
    """Why the pull request's author may run on the fleet unapproved, or None."""
    return trust_of(event, settings).trusted_because


def admit(
    trigger: Trigger, event: PullRequestEvent, settings: TrustSettings
) -> Trigger | NeedsApproval | Ignored:
    """Whether a pull_request delivery (one that names a head) starts its runs now."""
    pull = event.pull_request
    if pull is not None and pull.draft is True and not settings.run_drafts:
        return Ignored("draft: its runs start when it is ready for review")
    trust = trust_of(event, settings)
    trusted = trust.trusted_because
    if event.action == "labeled":
        label = event.label.name if event.label else None
        if label != settings.approval_label:
            return Ignored(f"label {label!r} starts nothing")
        if trusted is not None:
            return Ignored(f"approval label on a trusted pull request ({trusted}): nothing new")
        return trigger  # approved by someone who may add labels, for this head
    if trusted is not None:
        return trigger
    reason = f"from a fork by an author who is {trust.author_association or 'unknown'}"
    labels = {label.name for label in pull.labels} if pull else set()
    return NeedsApproval(trigger, reason, settings.approval_label in labels)


def approval_description(label: str) -> str:
    return f"needs approval: a maintainer adds the label {label}"
