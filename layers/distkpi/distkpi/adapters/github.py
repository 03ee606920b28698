"""GitHub over the REST API (github.com or GitHub Enterprise): commit statuses or check runs,
a change's files and merge base, a commit's parents, taking the approval label off a pull
request, a pull request's comments, a person's permission on a repository, and a file's
text at a commit (CODEOWNERS). Every request goes through ``_request``: writes paced per
installation, reads conditional, throttled answers waited out within the time left
(adapters/github_limits.py)."""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from distkpi.adapters.github_limits import (
    CONTENT_METHODS,
    ConditionalReads,
    WritePacer,
    throttle_wait,
)
from distkpi.domain.commit_status import CommitStatus, clip
from distkpi.domain.github.commits import Comparison, merge_base_of, parents_of
from distkpi.exceptions import (
    GitHubAuthError,
    GitHubError,
    GitHubNotFoundError,
    GitHubRateLimitError,
    GitHubWriteSkipped,
)

# server errors, retried by the session; GitHub's throttling answers (403/429) are waited
# out by _request, as long as they ask
RETRY_ON = (500, 502, 503, 504)
THROTTLE_RETRIES = 3


@dataclass
class TimeBudget:
    """The seconds GitHub calls may take in all from the last ``start()``: the webhook starts
    one per delivery, since GitHub stops waiting for an answer after 10 s."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    _until: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.start()

    def start(self) -> None:
        self._until = self.clock() + self.seconds

    def left(self) -> float:
        return max(0.0, self._until - self.clock())


def _session(retries: int, backoff_s: float) -> requests.Session:
    retry = Retry(
        total=retries,
        backoff_factor=backoff_s,
        status_forcelist=RETRY_ON,
        allowed_methods=frozenset({"POST", "GET", "DELETE", "PATCH"}),
        # a retry-after is _request's to honour, within the time left (urllib3 would sleep
        # it whole on a 429)
        respect_retry_after_header=False,
        raise_on_status=False,
    )
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=retry))
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


class GitHubStatusClient:
    def __init__(
        self,
        api_url: str,
        token: Callable[[str], str],
        *,
        session: requests.Session | None = None,
        retries: int = 4,
        backoff_s: float = 0.5,
        timeout_s: tuple[float, float] = (3.05, 10.0),
        budget: TimeBudget | None = None,
        refused: Callable[[str], None] | None = None,
        pacer: WritePacer | None = None,
        pace_key: Callable[[str], str] = lambda repo: "token",
        max_wait_s: float = 60.0,
        count: Callable[[str], None] = lambda metric: None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token
        self.session = session or _session(retries, backoff_s)
        self.timeout_s = timeout_s
        self.attempts = retries + 1
        self.budget = budget
        # told of a repository whose token GitHub refused (the App's cache drops it)
        self.refused = refused
        # content-creating requests wait their turn per installation (``pace_key``)
        self.pacer = pacer
        self.pace_key = pace_key
        # the longest a throttled request or a paced write waits without a budget
        self.max_wait_s = max_wait_s
        self.reads = ConditionalReads()
        self.count = count
        self.clock = clock
        self.sleep = sleep

    def _timeout(self) -> tuple[float, float]:
        """Each attempt's (connect, read) timeout: within what is left of the budget, shared
        by the attempts still possible."""
        if self.budget is None:
            return self.timeout_s
        share = self.budget.left() / self.attempts
        if share < 0.1:
            raise GitHubError("no time left for GitHub in this delivery")
        return min(self.timeout_s[0], share), min(self.timeout_s[1], share)

    def _headers(self, repo: str) -> dict[str, str]:
        """A personal token, or the App's installation token for ``repo``."""
        return {
            "Authorization": f"Bearer {self._token(repo)}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }

    def compare(self, repo: str, base: str, head: str, limit: int = 300) -> Comparison:
        """GET /repos/{repo}/compare/base...head: the merge base (from the first page) and the
        paths changed, page by page until a page adds nothing new: a renamed file's old path
        (``previous_filename``) too, since moving a file away changes what was there. The
        files are None when GitHub cannot list them all (``limit`` files or more: its cap)
        or a later page fails; all is None, with the problem, when GitHub cannot be asked."""
        files: dict[str, None] = {}  # GitHub's entries, by filename: what its cap counts
        paths: dict[str, None] = {}
        merge_base: str | None = None
        url = f"{self.api_url}/repos/{repo}/compare/{base}...{head}"
        for page in range(1, limit // 100 + 2):
            try:
                code, answer = self._request(
                    "GET", url, repo, params={"per_page": 100, "page": page}
                )
            except GitHubError as exc:
                return Comparison(None, merge_base, str(exc))
            if code != 200:
                return Comparison(None, merge_base, f"GitHub answered {code}")
            if page == 1:
                merge_base = merge_base_of(answer)
            listed = answer.get("files") if isinstance(answer, dict) else None
            entries = [f for f in listed or [] if isinstance(f, dict)]
            new = [f for f in entries if _name(f, "filename") and f["filename"] not in files]
            for entry in new:
                files[entry["filename"]] = None
                paths.update(dict.fromkeys(p for p in _paths_of(entry) if p not in paths))
            if len(files) >= limit:
                return Comparison(None, merge_base)
            if len(entries) < 100 or not new:
                return Comparison(list(paths), merge_base)
        return Comparison(None, merge_base)

    def compare_commits(self, repo: str, base: str, head: str) -> list[dict[str, Any]]:
        """The ``commits`` of GET /repos/{repo}/compare/base...head, oldest first, page by
        page (GitHub lists at most 250 in all); GitHubError when GitHub refuses or is down."""
        url = f"{self.api_url}/repos/{repo}/compare/{base}...{head}"
        commits: list[dict[str, Any]] = []
        for page in range(1, 4):
            answer = self._send("GET", url, repo, params={"per_page": 100, "page": page})
            listed = answer.get("commits")
            entries = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
            commits += entries
            if len(entries) < 100:
                break
        return commits

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        """The parents of commit ``sha``, the first parent first (none: a root commit), from
        GET /repos/{repo}/git/commits/{sha}: the commit object alone, which GitHub answers
        without computing the commit's diff as GET .../commits/{sha} does. GitHubError when
        GitHub refuses, is down, or does not know the commit (404)."""
        answer = self._send("GET", f"{self.api_url}/repos/{repo}/git/commits/{sha}", repo)
        parents = parents_of(answer)
        if parents is None:
            raise GitHubError(f"GitHub's answer for commit {sha[:10]} lists no parents")
        return parents

    def default_branch_head(self, repo: str) -> tuple[str, str]:
        """The repository's default branch and the commit at its head: GET /repos/{repo}, then
        GET /repos/{repo}/git/ref/heads/{branch} (the ref alone), both conditional (the
        ETags live in this client, so a schedule given again to the same container costs
        two 304s). GitHubError when GitHub refuses or is down."""
        branch = self._send("GET", f"{self.api_url}/repos/{repo}", repo).get("default_branch")
        if not isinstance(branch, str) or not branch:
            raise GitHubError(f"GitHub's answer for {repo} names no default branch")
        url = f"{self.api_url}/repos/{repo}/git/ref/heads/{quote(branch)}"
        target = self._send("GET", url, repo).get("object")
        sha = target.get("sha") if isinstance(target, dict) else None
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise GitHubError(f"GitHub's answer for {repo}'s {branch} names no commit")
        return branch, sha

    def remove_label(self, repo: str, number: int, label: str) -> None:
        """DELETE /repos/{repo}/issues/{number}/labels/{label}; a label already gone is
        no error."""
        url = f"{self.api_url}/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}"
        code, _ = self._request("DELETE", url, repo)
        self._check_auth(code, repo)
        if code not in (200, 404):
            raise GitHubError(f"GitHub answered {code} removing {label!r}")

    def post(self, status: CommitStatus, *, skippable: bool = False) -> None:
        """``skippable``: GitHubWriteSkipped instead of waiting for a turn (see _request)."""
        body: dict[str, str] = {
            "state": status.state,
            "context": status.context,
            "description": clip(status.description),
        }
        if status.target_url:
            body["target_url"] = status.target_url
        url = f"{self.api_url}/repos/{status.repo}/statuses/{status.sha}"
        code, _ = self._request("POST", url, status.repo, body=body, skippable=skippable)
        self._check_auth(code, status.repo)
        if code != 201:
            raise GitHubError(f"GitHub answered {code} for {status.repo}@{status.sha[:10]}")

    def _check_auth(self, code: int, repo: str) -> None:
        """401: a token GitHub no longer takes; 403 with an App: the installation has no
        access to the repository (a personal token's 403 is an ordinary refusal)."""
        if code == 401 or (code == 403 and self.refused is not None):
            if self.refused is not None:
                self.refused(repo)
            raise GitHubAuthError(f"GitHub answered {code} for {repo}: credentials refused")

    def create_check_run(self, repo: str, body: dict[str, Any], *, skippable: bool = False) -> int:
        url = f"{self.api_url}/repos/{repo}/check-runs"
        answer = self._send("POST", url, repo, body=body, skippable=skippable)
        return int(answer.get("id") or 0)

    def update_check_run(
        self, repo: str, check_run: int, body: dict[str, Any], *, skippable: bool = False
    ) -> None:
        url = f"{self.api_url}/repos/{repo}/check-runs/{check_run}"
        self._send("PATCH", url, repo, body=body, skippable=skippable)

    def collaborator_permission(self, repo: str, login: str) -> str:
        """``login``'s role on ``repo`` (GET .../collaborators/{login}/permission): its
        ``role_name`` (admin, maintain, write, triage, read), else its ``permission``;
        "none" for someone GitHub does not know there (404)."""
        url = f"{self.api_url}/repos/{repo}/collaborators/{quote(login, safe='')}/permission"
        try:
            answer = self._send("GET", url, repo)
        except GitHubNotFoundError:
            return "none"
        role = answer.get("role_name") or answer.get("permission")
        return role if isinstance(role, str) and role else "none"

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        """POST /repos/{repo}/issues/{number}/comments (a pull request is an issue): the
        new comment's id."""
        url = f"{self.api_url}/repos/{repo}/issues/{number}/comments"
        answer = self._send("POST", url, repo, body={"body": body})
        return int(answer.get("id") or 0)

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> None:
        """PATCH /repos/{repo}/issues/comments/{comment_id}; GitHubNotFoundError when the
        comment is gone (deleted by a person)."""
        url = f"{self.api_url}/repos/{repo}/issues/comments/{comment_id}"
        self._send("PATCH", url, repo, body={"body": body})

    def file_text(self, repo: str, path: str, ref: str) -> str | None:
        """A file's text at commit ``ref`` (GET /repos/{repo}/contents/{path}?ref=); None
        when there is no such file there, GitHubError when GitHub refuses or is down."""
        url = f"{self.api_url}/repos/{repo}/contents/{quote(path)}"
        try:
            answer = self._send("GET", url, repo, params={"ref": ref})
        except GitHubNotFoundError:
            return None
        content = answer.get("content")
        if answer.get("encoding") != "base64" or not isinstance(content, str):
            return None  # a folder, a link or a file over GitHub's 1 MB for this endpoint
        try:
            return base64.b64decode(content).decode("utf-8", errors="replace")
        except (binascii.Error, ValueError) as exc:
            raise GitHubError(f"GitHub's contents of {path} are not base64") from exc

    def _send(
        self,
        method: str,
        url: str,
        repo: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        skippable: bool = False,
    ) -> dict[str, Any]:
        code, answer = self._request(
            method, url, repo, body=body, params=params, skippable=skippable
        )
        self._check_auth(code, repo)
        if code == 404:
            raise GitHubNotFoundError(f"GitHub answered 404 to {method} for {repo}")
        if code not in (200, 201):
            raise GitHubError(f"GitHub answered {code} to {method} for {repo}")
        return answer if isinstance(answer, dict) else {}

    def _request(
        self,
        method: str,
        url: str,
        repo: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        skippable: bool = False,
    ) -> tuple[int, Any]:
        """One request, as GitHub's limits want it: a write waits its turn (the pacer), a
        read that repeats is conditional (a 304 answers with the answer kept), and a
        throttled answer is waited out as long as it asks, while there is time left;
        GitHubRateLimitError when there is not. Its status code and JSON answer.
        ``skippable``: a write that waits for nothing, GitHubWriteSkipped when its turn is
        not now or GitHub throttles it (what comes after it must stand without it)."""
        content = method in CONTENT_METHODS
        if content:
            self._take_turn(method, repo, skippable)
        query = "&".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
        cache_key = f"{url}?{query}"
        for attempt in range(THROTTLE_RETRIES + 1):
            headers, timeout = self._headers(repo), self._timeout()
            etag = None if content else self.reads.etag(cache_key)
            if etag is not None:
                headers["If-None-Match"] = etag
            try:
                response = self.session.request(
                    method, url, json=body, params=params, headers=headers, timeout=timeout
                )
            except requests.RequestException as exc:
                raise GitHubError(f"GitHub unreachable: {type(exc).__name__}") from exc
            wait = throttle_wait(response.status_code, response.headers, self.clock())
            if wait is None:
                return self._answer(method, response, cache_key, etag)
            self.count("GitHubThrottled")
            if skippable:
                raise GitHubWriteSkipped(
                    f"GitHub answered {response.status_code} to {method} for {repo}: left out"
                )
            left = self._time_left()
            if wait > left or attempt == THROTTLE_RETRIES:
                raise GitHubRateLimitError(
                    f"GitHub answered {response.status_code} to {method} for {repo}: "
                    f"retry after {wait:.0f} s, {left:.0f} s left"
                )
            self.sleep(wait)
        raise AssertionError("unreachable")

    def _take_turn(self, method: str, repo: str, skippable: bool) -> None:
        """A write's turn under its installation's pace: waited for, or for a ``skippable``
        one taken only if it is now."""
        if self.pacer is None:
            return
        if skippable:
            if not self.pacer.turn_now(self.pace_key(repo)):
                self.count("GitHubWritesSkipped")
                raise GitHubWriteSkipped(f"GitHub writes paced: {method} for {repo} left out")
        elif self.pacer.wait_turn(self.pace_key(repo), self._time_left()):
            self.count("GitHubWritesPaced")

    def _answer(
        self, method: str, response: requests.Response, cache_key: str, etag: str | None
    ) -> tuple[int, Any]:
        if response.status_code == 304 and etag is not None:
            self.count("GitHubNotModified")
            return 200, self.reads.answer(cache_key)
        try:
            answer = response.json() if response.content else None
        except ValueError:
            answer = None
        new_etag = response.headers.get("ETag")
        if method == "GET" and response.status_code == 200 and new_etag:
            self.reads.keep(cache_key, new_etag, answer)
        return response.status_code, answer

    def _time_left(self) -> float:
        """How long a request may wait for its turn or a throttled answer: what is left of
        the budget, at most ``max_wait_s``."""
        if self.budget is None:
            return self.max_wait_s
        return min(self.budget.left(), self.max_wait_s)


def _name(entry: dict[str, Any], field: str) -> bool:
    return isinstance(entry.get(field), str) and bool(entry[field])


def _paths_of(entry: dict[str, Any]) -> list[str]:
    """A compare entry's path, and for a renamed (or copied) file the path it came from."""
    found = [entry["filename"]]
    if _name(entry, "previous_filename"):
        found.append(entry["previous_filename"])
    return found
