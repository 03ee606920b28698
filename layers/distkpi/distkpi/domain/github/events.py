"""The GitHub deliveries the stack takes, as typed models: parsed once at the edge
(entry/webhook.py), then read as attributes by the decisions (webhook.py, trust.py).

Only the fields those decisions read are modelled, each as GitHub documents it. A field that
is missing or of another type than GitHub sends is None (a list: its well-formed items),
never an error: a signed delivery with a wrong field is judged by the decision that needs
the field (Invalid for one that would start runs, else Ignored), with its own message.
Pydantic rather than Powertools' parser models: Powertools models AWS events, not GitHub's.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)


def _or_none(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


def _well_formed(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    if not isinstance(value, list):
        return []
    kept = []
    for item in value:
        try:
            kept.append(handler([item])[0])
        except ValidationError:
            continue
    return kept


Text = Annotated[StrictStr | None, WrapValidator(_or_none)]
Number = Annotated[StrictInt | None, WrapValidator(_or_none)]
Flag = Annotated[StrictBool | None, WrapValidator(_or_none)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Repository(_Model):
    full_name: Text = None


class Installation(_Model):
    id: Number = None


class Account(_Model):
    login: Text = None


class Label(_Model):
    name: StrictStr


class App(_Model):
    id: Annotated[StrictInt | StrictStr | None, WrapValidator(_or_none)] = None


class Branch(_Model):
    """A pull request's head or base: its branch, commit and repository."""

    ref: Text = None
    sha: Text = None
    repo: Annotated[Repository | None, WrapValidator(_or_none)] = None


Side = Annotated[Branch | None, WrapValidator(_or_none)]


class PullRequest(_Model):
    # a pull_request delivery puts its number at the top; a check's pull request here
    number: Number = None
    user: Annotated[Account | None, WrapValidator(_or_none)] = None  # who opened it
    head: Side = None
    base: Side = None
    draft: Flag = None
    author_association: Text = None
    labels: Annotated[list[Label], WrapValidator(_well_formed)] = []
    updated_at: Text = None
    # a closed pull request's: whether it was merged, and the commit its merge made
    merged: Flag = None
    merge_commit_sha: Text = None


class GitHubEvent(_Model):
    """What every delivery may carry: the repository and the App installation acting."""

    action: Text = None
    repository: Annotated[Repository | None, WrapValidator(_or_none)] = None
    installation: Annotated[Installation | None, WrapValidator(_or_none)] = None
    sender: Annotated[Account | None, WrapValidator(_or_none)] = None

    @property
    def repo(self) -> str | None:
        return self.repository.full_name if self.repository else None

    @property
    def installation_id(self) -> int | None:
        return self.installation.id if self.installation else None

    @property
    def actor(self) -> str | None:
        """Who made GitHub send the delivery (pushed, labelled, pressed Re-run)."""
        return self.sender.login if self.sender else None


class OtherEvent(GitHubEvent):
    """An event the stack does not take: it starts nothing."""

    name: str = ""


class PullRequestEvent(GitHubEvent):
    number: Number = None
    pull_request: Annotated[PullRequest | None, WrapValidator(_or_none)] = None
    label: Annotated[Label | None, WrapValidator(_or_none)] = None


class CommitAuthor(_Model):
    username: Text = None  # their GitHub login, when GitHub knows the commit's e-mail
    name: Text = None


class PushedCommit(_Model):
    id: Text = None
    author: Annotated[CommitAuthor | None, WrapValidator(_or_none)] = None


class PushEvent(GitHubEvent):
    ref: Text = None
    before: Text = None
    after: Text = None
    deleted: Flag = None
    head_commit: Annotated[PushedCommit | None, WrapValidator(_or_none)] = None
    commits: Annotated[list[PushedCommit], WrapValidator(_well_formed)] = []

    @property
    def author(self) -> str | None:
        """The head commit's author (``head_commit``, else the pushed commit that is the
        new head): their login, else the name the commit gives."""
        heads = [self.head_commit] if self.head_commit else []
        heads += [c for c in self.commits if c.id == self.after]
        author = next((c.author for c in heads if c.author is not None), None)
        return (author.username or author.name) if author else None


Pulls = Annotated[list[PullRequest], WrapValidator(_well_formed)]


class CheckSuite(_Model):
    head_branch: Text = None
    head_sha: Text = None
    app: Annotated[App | None, WrapValidator(_or_none)] = None
    pull_requests: Pulls = []


class CheckRun(_Model):
    name: Text = None
    external_id: Text = None
    head_sha: Text = None
    app: Annotated[App | None, WrapValidator(_or_none)] = None
    check_suite: Annotated[CheckSuite | None, WrapValidator(_or_none)] = None
    pull_requests: Pulls = []


class RequestedAction(_Model):
    """The button of a check run's ``actions`` someone pressed (its identifier)."""

    identifier: Text = None


class CheckRunEvent(GitHubEvent):
    check_run: Annotated[CheckRun | None, WrapValidator(_or_none)] = None
    requested_action: Annotated[RequestedAction | None, WrapValidator(_or_none)] = None


class IssuePullRequest(_Model):
    """Present on an issue that is a pull request (its links): GitHub's only sign of it."""

    url: Text = None


class Issue(_Model):
    number: Number = None
    pull_request: Annotated[IssuePullRequest | None, WrapValidator(_or_none)] = None


class Comment(_Model):
    body: Text = None
    user: Annotated[Account | None, WrapValidator(_or_none)] = None


class IssueCommentEvent(GitHubEvent):
    """A comment on an issue or a pull request (GitHub sends both as issue_comment)."""

    issue: Annotated[Issue | None, WrapValidator(_or_none)] = None
    comment: Annotated[Comment | None, WrapValidator(_or_none)] = None


class CheckSuiteEvent(GitHubEvent):
    check_suite: Annotated[CheckSuite | None, WrapValidator(_or_none)] = None


class RepositoryDispatchEvent(GitHubEvent):
    """GitHub puts the dispatch's type in ``action``; ``client_payload`` is what the
    sender posted, kept as sent: its checks say which field is wrong (webhook.py)."""

    client_payload: Any = None
