"""A GitHub stand-in on 127.0.0.1: accepts and records commit statuses, check runs, label
removals from pull requests and their comments (created, listed, edited), answers a person's
permission on a repository (as a test sets it), a file's contents at a commit from the
repository it serves, and compare requests (the merge base, and the files from the git
repository it serves or as it is given them) and Git commit requests (their parents, from
that repository), like the REST API. A repository dispatch it answers 204, then delivers the
signed repository_dispatch webhook, as GitHub does, to its ``webhook``; any other event it
delivers signed when asked (``deliver``).
As a GitHub App's host it generates the App's key pair, checks each JWT's RS256 signature,
issues installation tokens that expire, and takes only those. Like GitHub it answers each
GET with an ETag and a conditional GET whose answer has not changed with 304, and counts
the requests by kind (``kinds``: content-creating, reads, 304s, token exchanges)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from distkpi.domain.github.webhook import sign
from distkpi_cli.local.standin_git import GitRepository
from distkpi_cli.local.standin_server import QuietHandler, StandInServer

# what receives a webhook delivery (its headers, signed, and body): its status and answer
Webhook = Callable[[dict[str, str], bytes], tuple[int, dict[str, Any]]]

STATUS_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/statuses/(?P<sha>[0-9a-f]{40})$"
)
LABEL_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/(?P<number>[0-9]+)/labels/(?P<label>[^/]+)$"
)
COMPARE_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/compare/(?P<range>[^/?]+)")
TOKEN_PATH = re.compile(r"^/app/installations/(?P<installation>[0-9]+)/access_tokens$")
INSTALLATION_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/installation$")
CHECK_RUNS_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/check-runs$")
CHECK_RUN_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/check-runs/(?P<id>[0-9]+)$")
REPO_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)$")
BRANCH_REF_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/git/ref/heads/(?P<branch>.+)$"
)
GIT_COMMIT_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/git/commits/(?P<sha>[0-9a-f]{40})$"
)
ISSUE_COMMENTS_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/(?P<number>[0-9]+)/comments$"
)
ISSUE_COMMENT_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/comments/(?P<id>[0-9]+)$"
)
CONTENTS_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/contents/(?P<path>.+)$")
MAX_COMMENT = 65_536  # GitHub refuses a longer issue comment body (422)
COMMENTER = "distkpi[bot]"  # the login the stand-in's comments are by
DISPATCHES_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/dispatches$")
PERMISSION_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/collaborators/(?P<login>[^/]+)/permission$"
)
# GitHub's role_name -> its legacy `permission` (maintain reads as write, triage as read)
PERMISSIONS = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read"}
PERMISSIONS.update({"read": "read", "none": "none"})
MAX_CLIENT_PAYLOAD_KEYS = 10  # GitHub's limit on client_payload's top-level properties
MAX_EVENT_TYPE = 100
DEFAULT_BRANCH = "develop"
COMMIT_CHECKS_PATH = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/commits/(?P<sha>[0-9a-f]{40})/check-runs$"
)
STATES = {"pending", "success", "failure", "error"}
CHECK_STATUSES = {"queued", "in_progress", "completed"}
CONCLUSIONS = {
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
}
MAX_OUTPUT = 65_535  # GitHub's limit on a check run's output.summary and output.text
MAX_COMPARE_FILES = 300  # GitHub lists at most this many files in a compare
MAX_JWT_LIFETIME_S = 600
CONTENT_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


class GitHubApp:
    """The App's side of the stand-in: its key pair, installations and issued tokens."""

    def __init__(self, app_id: str = "904512", token_ttl_s: float = 3600.0) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.app_id = app_id
        self.private_key = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        self.public_key = key.public_key()
        self.token_ttl_s = token_ttl_s
        self.clock: Callable[[], float] = time.time
        self.installation = 58120731  # every repository's, unless it lost access
        self.lost_access: set[str] = set()
        self.tokens: dict[str, float] = {}  # issued token -> when it expires
        self.issued = 0

    def secret(self) -> str:
        """What the stack keeps in its App secret."""
        return json.dumps({"app_id": self.app_id, "private_key": self.private_key})

    def jwt_problem(self, auth: str | None) -> str | None:
        import jwt

        if not auth or not auth.startswith("Bearer "):
            return "A JSON web token could not be decoded"
        try:
            claims = jwt.decode(
                auth.removeprefix("Bearer "),
                self.public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
                leeway=60,
            )
        except jwt.PyJWTError as exc:
            return f"A JSON web token could not be decoded: {type(exc).__name__}"
        if str(claims["iss"]) != self.app_id:
            return "Integration not found"
        if claims["exp"] - claims["iat"] > MAX_JWT_LIFETIME_S:
            return "'Expiration time' claim ('exp') is too far in the future"
        return None

    def issue(self) -> dict[str, Any]:
        token = "ghs_" + secrets.token_hex(18)
        expires = self.clock() + self.token_ttl_s
        self.tokens[token] = expires
        self.issued += 1
        at = datetime.fromtimestamp(expires, UTC).isoformat(timespec="seconds")
        return {"token": token, "expires_at": at.replace("+00:00", "Z")}

    def takes(self, auth: str | None) -> bool:
        token = (auth or "").removeprefix("Bearer ")
        return self.tokens.get(token, 0.0) > self.clock()


@dataclass(frozen=True)
class Request:
    """A request that found its route: the path's parts, the query, credentials, body."""

    match: re.Match[str]
    query: dict[str, list[str]]
    auth: str | None
    raw: bytes

    @property
    def repo(self) -> str:
        return f"{self.match['owner']}/{self.match['repo']}"


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handle: Callable[[Request], tuple[int, Any]]
    token: bool = True  # takes the token; else it checks the App's JWT itself


class GitHubStandIn(StandInServer):
    """Records POST /repos/{owner}/{repo}/statuses/{sha}; 422 like GitHub on bad input.

    ``fail_next(500, 503)`` makes the next requests, on any route (or, with ``on``, the
    next ones whose "METHOD /path" starts so), answer those codes first, with ``headers``
    if given (``throttle_next`` scripts GitHub's limit answers).
    ``deliver(event, payload)`` makes a signed webhook delivery of any event.
    """

    def __init__(
        self,
        token: str | None = None,
        app: GitHubApp | None = None,
        port: int = 0,
        repository: Path | None = None,
    ) -> None:
        super().__init__(port)
        self.token = token
        self.app = app
        # the git repository it serves, for every owner/name: compares' merge bases and
        # files, commits' parents; None: compares list `changed_files`, commits are 404
        self.repository = repository
        self.statuses: list[dict[str, Any]] = []
        self.check_runs: list[dict[str, Any]] = []
        self.removed_labels: list[dict[str, Any]] = []
        # each pull request's comments as they stand now (id, repo, number, body, edits)
        self.comments: list[dict[str, Any]] = []
        # files served at every commit before the repository's own: {path: text}
        self.files: dict[str, str] = {}
        # each login's role on every repository (set_permission); a repository's owner is
        # its admin, anyone else reads
        self.permissions: dict[str, str] = {}
        # what GET /repos/{o}/{r}/compare/{base}...{head} lists (every range alike); None:
        # the repository's own changes, or 404 without one
        self.changed_files: list[str] | None = None
        # which of those are renames, and from where: {new path: previous path}
        self.renamed_from: dict[str, str] = {}
        # each branch's head for every owner/name, before the repository's own: {branch: sha}
        self.heads: dict[str, str] = {}
        self.requests = 0
        # each request by kind: "content" (POST, PATCH, PUT, DELETE but the App's token
        # exchange), "read" (a GET answered in full), "not_modified" (a 304), "token",
        # "scripted" (a failure or limit answered from fail_next or throttle_next)
        self.kinds: Counter[str] = Counter()
        # each request's method and path, in order (what a test asks was or was not asked)
        self.requested: list[str] = []
        # where repository_dispatch webhooks go, signed with webhook_secret; None: nowhere
        self.webhook: Webhook | None = None
        self.webhook_secret = ""
        # each webhook delivery made: event, delivery id, payload, status code and answer
        self.deliveries: list[dict[str, Any]] = []
        self._outbox: deque[tuple[dict[str, str], bytes]] = deque()
        self._delivering = threading.Lock()
        # scripted answers: code, headers, and the "METHOD /path" start they wait for
        self._scripted: deque[tuple[int, dict[str, str], str]] = deque()
        self._lock = threading.Lock()
        self._messages: dict[int, str] = {}

    def reset(self, token: str | None = None, app: GitHubApp | None = None) -> None:
        """Forget every request and script, as a new stand-in would, keeping the server (and
        its port); then answer for ``token`` or ``app``."""
        server, webhook, secret = self._server, self.webhook, self.webhook_secret
        self.__dict__.update(GitHubStandIn(token, app, self.port, self.repository).__dict__)
        self._server, self.webhook, self.webhook_secret = server, webhook, secret

    def set_permission(self, login: str, role: str) -> None:
        """``login``'s role (admin, maintain, write, triage, read, none) on every repository."""
        if role not in PERMISSIONS:
            raise ValueError(f"{role!r} is none of {', '.join(PERMISSIONS)}")
        with self._lock:
            self.permissions[login] = role

    def fail_next(self, *codes: int, headers: dict[str, str] | None = None, on: str = "") -> None:
        with self._lock:
            self._scripted.extend((code, dict(headers or {}), on) for code in codes)

    def throttle_next(
        self,
        code: int = 403,
        *,
        retry_after: float | None = None,
        reset_in: float | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` requests answered as GitHub's limits answer: ``code`` (403 or
        429) with ``retry-after``, or with ``x-ratelimit-remaining`` 0 and its reset
        ``reset_in`` seconds from now (an epoch second, as GitHub gives it)."""
        headers = {"x-ratelimit-limit": "5000"}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        if reset_in is not None:
            headers["x-ratelimit-remaining"] = "0"
            headers["x-ratelimit-reset"] = str(int(time.time() + reset_in))
        message = "You have exceeded a secondary rate limit. Please wait a few minutes."
        with self._lock:
            self._scripted.extend([(code, headers, "")] * times)
            self._messages[code] = message

    def handler(self) -> type[QuietHandler]:
        standin = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self._answer(*standin._serve("POST", self.path, self._auth(), self._body()))
                standin.deliver_queued()  # GitHub answers first, then delivers

            def do_PATCH(self) -> None:
                self._answer(*standin._serve("PATCH", self.path, self._auth(), self._body()))

            def do_GET(self) -> None:
                etag = self.headers.get("If-None-Match")
                self._answer(*standin._serve("GET", self.path, self._auth(), b"", etag))

            def do_DELETE(self) -> None:
                self._answer(*standin._serve("DELETE", self.path, self._auth(), b""))

            def _auth(self) -> str | None:
                return self.headers.get("Authorization")

            def _answer(self, code: int, body: Any, headers: dict[str, str]) -> None:
                data = b"" if code in (204, 304) else json.dumps(body).encode()
                self.reply(code, data, headers=headers)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        return Handler

    def _routes(self) -> list[Route]:
        """Every route but the reads of `/_standin/`: its method, path, whether it takes
        the token (else it checks the App's JWT itself) and its handler."""
        return [
            Route("POST", TOKEN_PATH, self._access_token, token=False),
            Route("POST", CHECK_RUNS_PATH, self._create_check),
            Route("POST", STATUS_PATH, self._status),
            Route("POST", DISPATCHES_PATH, self._dispatch),
            Route("POST", ISSUE_COMMENTS_PATH, self._create_comment),
            Route("GET", ISSUE_COMMENTS_PATH, self._list_comments),
            Route("PATCH", ISSUE_COMMENT_PATH, self._update_comment),
            Route("GET", CONTENTS_PATH, self._contents),
            Route("GET", PERMISSION_PATH, self._permission),
            Route("PATCH", CHECK_RUN_PATH, self._update_check),
            Route("GET", INSTALLATION_PATH, self._installation, token=False),
            Route("GET", COMMIT_CHECKS_PATH, self._list_checks),
            Route("GET", GIT_COMMIT_PATH, self._git_commit),
            Route("GET", REPO_PATH, self._repository),
            Route("GET", BRANCH_REF_PATH, self._branch_ref),
            Route("GET", COMPARE_PATH, self._compare),
            Route("DELETE", LABEL_PATH, self._remove_label),
        ]

    def _serve(
        self, method: str, path: str, auth: str | None, raw: bytes, etag: str | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        """The one request pipeline: a scripted answer (fail_next, throttle_next), else the
        route's; a GET's 200 with its ETag, or 304 when the ``If-None-Match`` it sent is
        that ETag still; each counted by kind."""
        url = urlparse(path)
        if not url.path.startswith("/_standin/"):
            with self._lock:
                asked = f"{method} {url.path}"
                found = next((s for s in self._scripted if asked.startswith(s[2])), None)
                if found is not None:
                    self._scripted.remove(found)
                    self.requests += 1
                    self.requested.append(asked)
                    self.kinds["scripted"] += 1
                    code, scripted, _ = found
                    return code, {"message": self._messages.get(code, "scripted failure")}, scripted
        code, body = self._route(method, path, auth, raw)
        kind = "read"
        if method in CONTENT_METHODS:
            kind = "token" if TOKEN_PATH.match(url.path) else "content"
        headers: dict[str, str] = {}
        if method == "GET" and code == 200:
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            headers["ETag"] = f'W/"{digest[:32]}"'
            if etag == headers["ETag"]:
                code, body, kind = 304, None, "not_modified"
        if not url.path.startswith("/_standin/"):
            with self._lock:
                self.kinds[kind] += 1
        return code, body, headers

    def _route(self, method: str, path: str, auth: str | None, raw: bytes) -> tuple[int, Any]:
        """A request counted, then its route (else 404), its credentials (else 401) and
        its handler."""
        url = urlparse(path)
        if method == "GET" and url.path.startswith("/_standin/"):
            return self._kept(url.path.removeprefix("/_standin/"))
        with self._lock:
            self.requests += 1
            self.requested.append(f"{method} {url.path}")
        for route in self._routes():
            match = route.pattern.match(url.path)
            if route.method == method and match:
                if route.token and not self._authorized(auth):
                    return 401, {"message": "Bad credentials"}
                request = Request(match, parse_qs(url.query), auth, raw)
                if route.token and self._lost(request):
                    return 403, {"message": "Resource not accessible by integration"}
                return route.handle(request)
        return 404, {"message": "Not Found"}

    def _lost(self, request: Request) -> bool:
        """An App's token on a repository its installation lost access to."""
        lost = self.app.lost_access if self.app is not None else set()
        return "owner" in request.match.groupdict() and request.repo in lost

    def _kept(self, name: str) -> tuple[int, Any]:
        """What a `distkpi local` attached to `distkpi local up` reads back."""
        kept = {"statuses": self.statuses, "checks": self.check_runs}
        kept["deliveries"] = self.deliveries
        kept["comments"] = self.comments
        with self._lock:
            found = kept.get(name)
            return (404, {"message": "Not Found"}) if found is None else (200, list(found))

    def _authorized(self, auth: str | None) -> bool:
        """An installation token the App issued and that has not expired; else the
        personal token, when one is set."""
        if self.app is not None:
            with self._lock:
                return self.app.takes(auth)
        return self.token is None or auth == f"Bearer {self.token}"

    @property
    def checks(self) -> list[dict[str, Any]]:
        """Each check run as it stands now."""
        with self._lock:
            return [dict(c) for c in self.check_runs]

    def _access_token(self, request: Request) -> tuple[int, Any]:
        with self._lock:
            if self.app is None:
                return 404, {"message": "Not Found"}
            problem = self.app.jwt_problem(request.auth)
            if problem is not None:
                return 401, {"message": problem}
            return 201, self.app.issue()

    def _installation(self, request: Request) -> tuple[int, Any]:
        with self._lock:
            if self.app is None:
                return 404, {"message": "Not Found"}
            problem = self.app.jwt_problem(request.auth)
            if problem is not None:
                return 401, {"message": problem}
            if request.repo in self.app.lost_access:
                return 404, {"message": "Not Found"}
            return 200, {"id": self.app.installation, "app_id": int(self.app.app_id)}

    def _create_check(self, request: Request) -> tuple[int, Any]:
        body = _check_body(request.raw, creating=True)
        if isinstance(body, tuple):
            return body
        with self._lock:
            check = {"id": len(self.check_runs) + 1, "repo": request.repo, **body}
            self.check_runs.append(check)
        return 201, check

    def _update_check(self, request: Request) -> tuple[int, Any]:
        body = _check_body(request.raw, creating=False)
        if isinstance(body, tuple):
            return body
        with self._lock:
            index = int(request.match["id"]) - 1
            if not 0 <= index < len(self.check_runs):
                return 404, {"message": "Not Found"}
            self.check_runs[index].update(body)
            return 200, dict(self.check_runs[index])

    def _list_checks(self, request: Request) -> tuple[int, Any]:
        name = request.query.get("check_name", [None])[0]
        found = [
            c
            for c in self.checks
            if c["repo"] == request.repo
            and c["head_sha"] == request.match["sha"]
            and (name is None or c["name"] == name)
        ]
        return 200, {"total_count": len(found), "check_runs": found[::-1]}

    def _create_comment(self, request: Request) -> tuple[int, Any]:
        """POST /repos/{owner}/{repo}/issues/{number}/comments."""
        body = _comment_body(request.raw)
        if isinstance(body, tuple):
            return body
        with self._lock:
            now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            comment = {
                "id": len(self.comments) + 1,
                "repo": request.repo,
                "number": int(request.match["number"]),
                "body": body,
                "user": {"login": COMMENTER, "type": "Bot"},
                "created_at": now,
                "updated_at": now,
                "edits": 0,
            }
            self.comments.append(comment)
            return 201, dict(comment)

    def _list_comments(self, request: Request) -> tuple[int, Any]:
        number = int(request.match["number"])
        with self._lock:
            return 200, [
                dict(c) for c in self.comments if (c["repo"], c["number"]) == (request.repo, number)
            ]

    def _update_comment(self, request: Request) -> tuple[int, Any]:
        """PATCH /repos/{owner}/{repo}/issues/comments/{id}: 404 for one it never made (or
        of another repository), as for a comment deleted on GitHub."""
        body = _comment_body(request.raw)
        if isinstance(body, tuple):
            return body
        with self._lock:
            index = int(request.match["id"]) - 1
            if not 0 <= index < len(self.comments) or self.comments[index]["repo"] != request.repo:
                return 404, {"message": "Not Found"}
            comment = self.comments[index]
            comment.update(body=body, edits=comment["edits"] + 1)
            return 200, dict(comment)

    def _contents(self, request: Request) -> tuple[int, Any]:
        """GET /repos/{owner}/{repo}/contents/{path}?ref=: a file of the repository it
        serves, base64 as GitHub sends it."""
        import base64

        ref = request.query.get("ref", ["HEAD"])[0]
        text = self.files.get(unquote(request.match["path"]))
        if text is None and self.repository is not None:
            text = GitRepository(self.repository).file_at(ref, unquote(request.match["path"]))
        if text is None:
            return 404, {"message": "Not Found"}
        content = base64.b64encode(text.encode()).decode()
        return 200, {"type": "file", "encoding": "base64", "content": content}

    def _compare(self, request: Request) -> tuple[int, Any]:
        if self.changed_files is None and self.repository is None:
            return 404, {"message": "Not Found"}
        listed = self.changed_files
        files = None if listed is None else [self._compare_entry(name) for name in listed]
        if self.repository is None:
            return 200, {"status": "ahead", "files": (files or [])[:MAX_COMPARE_FILES]}
        base, _, head = unquote(request.match["range"]).partition("...")
        answer = GitRepository(self.repository).compare(base, head, files)
        if answer is None:
            return 404, {"message": "Not Found"}
        return 200, {**answer, "files": answer["files"][:MAX_COMPARE_FILES]}

    def _git_commit(self, request: Request) -> tuple[int, Any]:
        """GET /repos/{owner}/{repo}/git/commits/{sha}, from the repository it serves."""
        found = None
        if self.repository is not None:
            repository = GitRepository(self.repository)
            found = repository.git_commit(request.match["sha"], self.url, request.repo)
        return (404, {"message": "Not Found"}) if found is None else (200, found)

    def _repository(self, request: Request) -> tuple[int, Any]:
        """GET /repos/{owner}/{repo}: its name and default branch (what the schedule asks)."""
        return 200, {"full_name": request.repo, "default_branch": DEFAULT_BRANCH}

    def _branch_ref(self, request: Request) -> tuple[int, Any]:
        """GET /repos/{owner}/{repo}/git/ref/heads/{branch}: its head, from ``heads`` or
        the repository it serves (whose HEAD is the default branch's head, when it has no
        branch of that name)."""
        branch = unquote(request.match["branch"])
        sha = self.heads.get(branch)
        if sha is None and self.repository is not None:
            git = GitRepository(self.repository)
            sha = git.commit_of(branch)
            if sha is None and branch == DEFAULT_BRANCH:
                sha = git.commit_of("HEAD")
        if sha is None:
            return 404, {"message": "Not Found"}
        ref = {"ref": f"refs/heads/{branch}", "object": {"sha": sha, "type": "commit"}}
        return 200, {**ref, "url": f"{self.url}/repos/{request.repo}/git/refs/heads/{branch}"}

    def _dispatch(self, request: Request) -> tuple[int, Any]:
        """POST /repos/{owner}/{repo}/dispatches: 204, and a repository_dispatch delivery
        queued (GitHub's payload: action = event_type, the default branch, client_payload,
        repository, sender, and the App's installation when it is one)."""
        body, refused = _json(request.raw)
        if refused is not None:
            return refused
        problem = _invalid_dispatch(body)
        if problem:
            return 422, {"message": problem}
        owner, name = request.match["owner"], request.match["repo"]
        payload: dict[str, Any] = {
            "action": body["event_type"],
            "branch": DEFAULT_BRANCH,
            "client_payload": body.get("client_payload") or {},
            "repository": {
                "name": name,
                "full_name": f"{owner}/{name}",
                "owner": {"login": owner},
                "default_branch": DEFAULT_BRANCH,
            },
            "sender": {"login": owner},
        }
        self.queue("repository_dispatch", payload)
        return 204, None

    def queue(self, event: str, payload: dict[str, Any]) -> str:
        """A delivery of ``event`` queued as GitHub sends one: signed with webhook_secret,
        a fresh delivery id (returned), and the App's installation when it is one."""
        if self.app is not None and "installation" not in payload:
            payload = {**payload, "installation": {"id": self.app.installation}}
        data = json.dumps(payload).encode()
        delivery = str(uuid.uuid4())
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "User-Agent": "GitHub-Hookshot/local",
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(self.webhook_secret.encode(), data),
        }
        with self._lock:
            self._outbox.append((headers, data))
        return delivery

    def deliver(self, event: str, payload: dict[str, Any]) -> dict[str, Any]:
        """A signed delivery of ``event`` made now; what was delivered and answered."""
        delivery = self.queue(event, payload)
        self.deliver_queued()
        with self._lock:
            return next(d for d in self.deliveries if d["delivery"] == delivery)

    def deliver_queued(self) -> None:
        """Deliver the webhooks queued, each recorded with what the webhook answered."""
        while True:
            with self._lock:
                if not self._outbox:
                    return
                headers, data = self._outbox.popleft()
            with self._delivering:  # one at a time: the handler is one Lambda container
                code, answer = self.webhook(headers, data) if self.webhook else (None, None)
            delivered = {
                "event": headers["X-GitHub-Event"],
                "delivery": headers["X-GitHub-Delivery"],
                "payload": json.loads(data),
                "status_code": code,
                "answer": answer,
            }
            with self._lock:
                self.deliveries.append(delivered)

    def _compare_entry(self, name: str) -> dict[str, Any]:
        """A file of a compare, as GitHub lists it: a rename names the path it came from."""
        if name in self.renamed_from:
            return {
                "filename": name,
                "status": "renamed",
                "previous_filename": self.renamed_from[name],
                "additions": 0,
                "deletions": 0,
                "changes": 0,
            }
        return {"filename": name, "status": "modified"}

    def _permission(self, request: Request) -> tuple[int, Any]:
        """GET /repos/{o}/{r}/collaborators/{login}/permission: the role set for the login,
        else admin for the repository's owner and read for anyone else."""
        login = unquote(request.match["login"])
        with self._lock:
            default = "admin" if login == request.match["owner"] else "read"
            role = self.permissions.get(login, default)
        return 200, {
            "permission": PERMISSIONS[role],
            "role_name": role,
            "user": {"login": login},
        }

    def _remove_label(self, request: Request) -> tuple[int, Any]:
        """DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}, recorded."""
        removed = {
            "repo": request.repo,
            "number": int(request.match["number"]),
            "label": unquote(request.match["label"]),
        }
        with self._lock:
            self.removed_labels.append(removed)
        return 200, []

    def _status(self, request: Request) -> tuple[int, dict[str, Any]]:
        body, refused = _json(request.raw)
        if refused is not None:
            return refused
        problem = _invalid(body)
        if problem:
            return 422, {"message": "Validation Failed", "errors": [problem]}
        status = {
            "repo": request.repo,
            "sha": request.match["sha"],
            "context": body.get("context", "default"),
            "state": body["state"],
            "description": body.get("description"),
            "target_url": body.get("target_url"),
        }
        with self._lock:
            self.statuses.append(status)
            status_id = len(self.statuses)
        return 201, {"id": status_id, **status}


def _json(raw: bytes) -> tuple[Any, tuple[int, Any] | None]:
    """A request's JSON body, or GitHub's 400 refusing it."""
    try:
        return json.loads(raw), None
    except ValueError:
        return None, (400, {"message": "Problems parsing JSON"})


def _check_body(raw: bytes, *, creating: bool) -> dict[str, Any] | tuple[int, Any]:
    """A check run's body, or the answer GitHub gives when it is refused."""
    body, refused = _json(raw)
    if refused is not None:
        return refused
    problem = _invalid_check(body, creating=creating)
    if problem:
        return 422, {"message": "Validation Failed", "errors": [problem]}
    return dict(body)


def _invalid(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body must be an object"
    if body.get("state") not in STATES:
        return "state is not included in the list"
    description = body.get("description")
    if description is not None and len(description) > 140:
        return "description is too long (maximum is 140 characters)"
    return None


def _invalid_dispatch(body: Any) -> str | None:
    """What GitHub refuses in a repository dispatch's body."""
    if not isinstance(body, dict):
        return "body must be an object"
    event_type = body.get("event_type")
    if not isinstance(event_type, str) or not 0 < len(event_type) <= MAX_EVENT_TYPE:
        return "Invalid request.\n\nevent_type is required (1 to 100 characters)."
    client_payload = body.get("client_payload", {})
    if not isinstance(client_payload, dict):
        return "Invalid request.\n\nclient_payload is not an object."
    if len(client_payload) > MAX_CLIENT_PAYLOAD_KEYS:
        return (
            f"Invalid request.\n\nNo more than {MAX_CLIENT_PAYLOAD_KEYS} properties are "
            f"allowed; {len(client_payload)} were supplied."
        )
    return None


def _invalid_check(body: Any, *, creating: bool) -> str | None:
    """What GitHub refuses in a check run's POST or PATCH body."""
    if not isinstance(body, dict):
        return "body must be an object"
    status, conclusion = body.get("status", "queued"), body.get("conclusion")
    output = body.get("output") or {}
    rules = [
        (creating and not (isinstance(body.get("name"), str) and body["name"]), "name"),
        (creating and not re.fullmatch(r"[0-9a-f]{40}", str(body.get("head_sha"))), "head_sha"),
        (status not in CHECK_STATUSES, "status is not included in the list"),
        (conclusion is not None and conclusion not in CONCLUSIONS, "conclusion not in the list"),
        (status == "completed" and conclusion is None, "conclusion wasn't supplied"),
        (conclusion == "action_required" and not body.get("details_url"), "details_url"),
        (not isinstance(output, dict) or not {"title", "summary"} <= set(output), "output"),
    ]
    for broken, problem in rules:
        if broken:
            return f"invalid {problem}" if " " not in problem else problem
    for field in ("summary", "text"):
        if len(output.get(field) or "") > MAX_OUTPUT:
            return f"output.{field} is too long (maximum is {MAX_OUTPUT} characters)"
    return None


class RemoteStandIn:
    """The stand-in of a running `distkpi local up`, read over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _get(self, path: str) -> list[dict[str, Any]]:
        import requests

        answer = requests.get(f"{self.url}{path}", timeout=10)
        answer.raise_for_status()
        found: list[dict[str, Any]] = answer.json()
        return found

    @property
    def statuses(self) -> list[dict[str, Any]]:
        return self._get("/_standin/statuses")

    @property
    def checks(self) -> list[dict[str, Any]]:
        return self._get("/_standin/checks")

    @property
    def deliveries(self) -> list[dict[str, Any]]:
        return self._get("/_standin/deliveries")

    @property
    def comments(self) -> list[dict[str, Any]]:
        return self._get("/_standin/comments")


def _comment_body(raw: bytes) -> str | tuple[int, Any]:
    """An issue comment's `body`, or GitHub's refusal."""
    body, refused = _json(raw)
    if refused is not None:
        return refused
    text = body.get("body") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text:
        return 422, {"message": "Invalid request: body is required"}
    if len(text) > MAX_COMMENT:
        return 422, {"message": "Validation Failed: body is too long (maximum is 65536 characters)"}
    return text
