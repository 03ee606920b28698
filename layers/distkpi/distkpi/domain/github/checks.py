"""A run as a GitHub check run: its status, conclusion and title (the markdown a person
reads in it is domain/github/check_summary.py).

A required check must never pass by breaking the job, so an infrastructure error is a
`failure` whose title says so, never `neutral`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distkpi.domain.commit_status import State
from distkpi.domain.untrusted import neutral

TITLE_LIMIT = 255  # what GitHub shows of a title


@dataclass(frozen=True)
class CheckRun:
    """One check run's fields, as POST/PATCH /repos/{repo}/check-runs takes them."""

    name: str
    head_sha: str
    external_id: str  # the run id: what a re-run refers to
    status: str  # queued, in_progress, completed
    title: str  # text, made neutral when sent (it may quote a log)
    summary: str  # markdown, whose untrusted parts its maker made neutral
    conclusion: str | None = None
    text: str | None = None
    details_url: str | None = None
    # the buttons it offers (domain/github/acceptance.ACCEPT_ACTION); None: left as they are,
    # () takes them off
    actions: tuple[dict[str, str], ...] | None = None

    def body(self) -> dict[str, Any]:
        title = neutral(self.title)[:TITLE_LIMIT]
        output: dict[str, Any] = {"title": title, "summary": self.summary}
        if self.text:
            output["text"] = self.text
        body: dict[str, Any] = {
            "name": self.name,
            "head_sha": self.head_sha,
            "external_id": self.external_id,
            "status": self.status,
            "output": output,
        }
        if self.conclusion is not None:
            body["conclusion"] = self.conclusion
        if self.details_url:
            body["details_url"] = self.details_url
        if self.actions is not None:
            body["actions"] = [dict(a) for a in self.actions]
        return body


def conclusion_of(state: State, description: str) -> tuple[str | None, str]:
    """(GitHub's conclusion, the title) for a commit-status state; None while pending."""
    if state is State.PENDING:
        return None, description
    if state is State.SUCCESS:
        return "success", description
    if state is State.FAILURE:
        return "failure", description
    if description.startswith("cancelled"):
        return "cancelled", description
    return "failure", f"infrastructure error: {description}"
