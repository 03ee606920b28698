"""GitHub over the REST API (github.com or GitHub Enterprise): commit statuses or check runs,
a change's files and merge base, a commit's parents, taking the approval label off a pull
request, a pull request's comments, and a file's text at a commit (CODEOWNERS)."""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from distkpi.domain.commit_status import CommitStatus, clip
from distkpi.domain.github.commits import Comparison, merge_base_of, parents_of
from distkpi.exceptions import GitHubAuthError, GitHubError, GitHubNotFoundError

RETRY_ON = (429, 500, 502, 503, 504)


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
        respect_retry_after_header=True,
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
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token
        self.session = session or _session(retries, backoff_s)
        self.timeout_s = timeout_s
        self.attempts = retries + 1
        self.budget = budget
        # told of a repository whose token GitHub refused (the App's cache drops it)
        self.refused = refused

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
                response = self.session.get(
                    url,
                    params={"per_page": 100, "page": page},
                    headers=self._headers(repo),
                    timeout=self._timeout(),
                )
            except (requests.RequestException, GitHubError) as exc:
                problem = str(exc) if isinstance(exc, GitHubError) else type(exc).__name__
                return Comparison(None, merge_base, f"GitHub unreachable: {problem}")
            if response.status_code != 200:
                return Comparison(None, merge_base, f"GitHub answered {response.status_code}")
            answer = response.json()
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

    def remove_label(self, repo: str, number: int, label: str) -> None:
        """DELETE /repos/{repo}/issues/{number}/labels/{label}; a label already gone is
        no error."""
        url = f"{self.api_url}/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}"
        try:
            response = self.session.delete(
                url, headers=self._headers(repo), timeout=self._timeout()
            )
        except requests.RequestException as exc:
            raise GitHubError(f"GitHub unreachable: {type(exc).__name__}") from exc
        self._check_auth(response.status_code, repo)
        if response.status_code not in (200, 404):
            raise GitHubError(f"GitHub answered {response.status_code} removing {label!r}")

    def post(self, status: CommitStatus) -> None:
        body: dict[str, str] = {
            "state": status.state,
            "context": status.context,
            "description": clip(status.description),
        }
        if status.target_url:
            body["target_url"] = status.target_url
        url = f"{self.api_url}/repos/{status.repo}/statuses/{status.sha}"
        headers, timeout = self._headers(status.repo), self._timeout()
        try:
            response = self.session.post(url, json=body, headers=headers, timeout=timeout)
        except requests.RequestException as exc:
            raise GitHubError(f"GitHub unreachable: {type(exc).__name__}") from exc
        self._check_auth(response.status_code, status.repo)
        if response.status_code != 201:
            raise GitHubError(
                f"GitHub answered {response.status_code} for {status.repo}@{status.sha[:10]}"
            )

    def _check_auth(self, code: int, repo: str) -> None:
        """401: a token GitHub no longer takes; 403 with an App: the installation has no
        access to the repository (a personal token's 403 is an ordinary refusal)."""
        if code == 401 or (code == 403 and self.refused is not None):
            if self.refused is not None:
                self.refused(repo)
            raise GitHubAuthError(f"GitHub answered {code} for {repo}: credentials refused")

    def check_runs(self, repo: str, sha: str, name: str) -> list[dict[str, Any]]:
        """The check runs named ``name`` on ``sha`` (GET .../commits/{sha}/check-runs)."""
        url = f"{self.api_url}/repos/{repo}/commits/{sha}/check-runs"
        params = {"check_name": name, "filter": "all", "per_page": 100}
        answer = self._send("GET", url, repo, params=params)
        runs = answer.get("check_runs")
        return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []

    def create_check_run(self, repo: str, body: dict[str, Any]) -> int:
        answer = self._send("POST", f"{self.api_url}/repos/{repo}/check-runs", repo, body=body)
        return int(answer.get("id") or 0)

    def update_check_run(self, repo: str, check_run: int, body: dict[str, Any]) -> None:
        url = f"{self.api_url}/repos/{repo}/check-runs/{check_run}"
        self._send("PATCH", url, repo, body=body)

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
    ) -> dict[str, Any]:
        headers, timeout = self._headers(repo), self._timeout()
        try:
            response = self.session.request(
                method, url, json=body, params=params, headers=headers, timeout=timeout
            )
        except requests.RequestException as exc:
            raise GitHubError(f"GitHub unreachable: {type(exc).__name__}") from exc
        self._check_auth(response.status_code, repo)
        if response.status_code == 404:
            raise GitHubNotFoundError(f"GitHub answered 404 to {method} for {repo}")
        if response.status_code not in (200, 201):
            raise GitHubError(f"GitHub answered {response.status_code} to {method} for {repo}")
        answer = response.json()
        return answer if isinstance(answer, dict) else {}


def _name(entry: dict[str, Any], field: str) -> bool:
    return isinstance(entry.get(field), str) and bool(entry[field])


def _paths_of(entry: dict[str, Any]) -> list[str]:
    """A compare entry's path, and for a renamed (or copied) file the path it came from."""
    found = [entry["filename"]]
    if _name(entry, "previous_filename"):
        found.append(entry["previous_filename"])
    return found
