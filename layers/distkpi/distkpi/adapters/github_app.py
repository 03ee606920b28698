"""Signing in to GitHub as a GitHub App: a JWT (RS256) signed with the App's private key,
exchanged for an installation's token, which is cached until shortly before it expires.

The installation of a repository comes from each delivery (`installation.id`), remembered
per container, else from GET /repos/{repo}/installation. With a ``store`` (the table), both
the installation of a repository and each installation's token outlive the container: every
function's containers share one token per installation until shortly before it expires.
Neither the key, the JWT nor a token is ever logged or put into an error message.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

import requests

from distkpi.exceptions import GitHubAuthError, StorageError

# GitHub refuses a JWT valid for more than 10 minutes, and one issued "in the future": its
# clock and ours may differ by a minute
JWT_LIFETIME_S = 540
CLOCK_SKEW_S = 60
# an installation token lasts an hour; one with less than this left is renewed first
RENEW_BEFORE_S = 300

T = TypeVar("T")


@dataclass(frozen=True)
class AppCredentials:
    app_id: str
    private_key: str  # PEM

    @classmethod
    def from_secret(cls, value: str) -> AppCredentials:
        """The stack's App secret: JSON {"app_id": ..., "private_key": "-----BEGIN ..."}."""
        try:
            data = json.loads(value)
            return cls(str(data["app_id"]), str(data["private_key"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise GitHubAuthError(
                "the GitHub App secret is not JSON with app_id and private_key"
            ) from exc


class TokenStore(Protocol):
    """Where installations and their tokens are kept across containers (the table, where
    an item goes when its token expires)."""

    def installation(self, repo: str) -> int | None: ...
    def keep_installation(self, repo: str, installation: int) -> None: ...
    def token(self, installation: int) -> tuple[str, float] | None: ...
    def keep_token(self, installation: int, token: str, expires_at: float) -> None: ...
    def forget(self, repo: str, installation: int | None) -> None: ...


@dataclass(frozen=True)
class _Token:
    value: str
    expires_at: float


def _expiry(text: object) -> float:
    if not isinstance(text, str):
        raise GitHubAuthError("GitHub's installation token has no expires_at")
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class AppAuth:
    api_url: str
    credentials: Callable[[], AppCredentials]
    session: requests.Session = field(default_factory=requests.Session)
    timeout_s: tuple[float, float] = (3.05, 10.0)
    clock: Callable[[], float] = time.time  # when cached tokens expire
    jwt_clock: Callable[[], float] = time.time  # what a JWT says it was issued at
    store: TokenStore | None = None  # None: tokens kept by this container only
    _tokens: dict[int, _Token] = field(default_factory=dict, init=False)
    _installations: dict[str, int] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def remember(self, repo: str, installation: int) -> None:
        """The installation a delivery for ``repo`` came from."""
        with self._lock:
            self._installations[repo] = installation

    def forget(self, repo: str) -> None:
        """GitHub refused the token for ``repo`` (revoked, or the App lost access): the next
        call asks for the installation and a token afresh."""
        with self._lock:
            installation = self._installations.pop(repo, None)
        if installation is None:
            installation = self._stored(lambda store: store.installation(repo))
        if installation is not None:
            with self._lock:
                self._tokens.pop(installation, None)
        self._keep(lambda store: store.forget(repo, installation))

    def installation(self, repo: str) -> int:
        """The App's installation on ``repo``: remembered, kept in the store, else asked."""
        installation = self._installations.get(repo)
        if installation is not None:
            return installation
        installation = self._stored(lambda store: store.installation(repo))
        if installation is None:
            installation = self._installation_of(repo)
            self._keep(lambda store: store.keep_installation(repo, installation))
        self.remember(repo, installation)
        return installation

    def token_for(self, repo: str) -> str:
        """An installation token that may act on ``repo``, renewed when less than
        RENEW_BEFORE_S of it is left; GitHubAuthError when GitHub refuses the App or the
        installation cannot reach the repository."""
        installation = self.installation(repo)
        cached = self._tokens.get(installation)
        if cached is None:
            stored = self._stored(lambda store: store.token(installation))
            cached = _Token(*stored) if stored is not None else None
        if cached is not None and cached.expires_at - self.clock() > RENEW_BEFORE_S:
            with self._lock:
                self._tokens[installation] = cached
            return cached.value
        token = self._exchange(installation)
        with self._lock:
            self._tokens[installation] = token
        self._keep(lambda store: store.keep_token(installation, token.value, token.expires_at))
        # a delivery's installation, which other containers then need not ask for
        self._keep(lambda store: store.keep_installation(repo, installation))
        return token.value

    def _stored(self, read: Callable[[TokenStore], T | None]) -> T | None:
        """What the store keeps; None without a store or when it cannot be read (GitHub is
        asked instead)."""
        if self.store is None:
            return None
        try:
            return read(self.store)
        except StorageError:
            return None

    def _keep(self, write: Callable[[TokenStore], None]) -> None:
        """A store that cannot be written leaves this container's copy, and another
        container asks GitHub for its own."""
        if self.store is None:
            return
        with contextlib.suppress(StorageError):
            write(self.store)

    def jwt(self) -> str:
        import jwt  # cryptography's import time stays off the functions' cold start

        credentials = self.credentials()
        now = int(self.jwt_clock())
        claims = {"iat": now - CLOCK_SKEW_S, "exp": now + JWT_LIFETIME_S, "iss": credentials.app_id}
        try:
            return jwt.encode(claims, credentials.private_key, algorithm="RS256")
        except (ValueError, TypeError, jwt.PyJWTError) as exc:
            raise GitHubAuthError("the GitHub App's private key cannot sign a JWT") from exc

    def _app_headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.jwt()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }

    def _installation_of(self, repo: str) -> int:
        response = self._call("GET", f"/repos/{repo}/installation", f"installation of {repo}")
        installation = response.get("id")
        if not isinstance(installation, int):
            raise GitHubAuthError(f"the App is not installed on {repo}")
        return installation

    def _exchange(self, installation: int) -> _Token:
        answer = self._call(
            "POST",
            f"/app/installations/{installation}/access_tokens",
            f"token of installation {installation}",
        )
        token = answer.get("token")
        if not isinstance(token, str) or not token:
            raise GitHubAuthError(f"GitHub gave no token for installation {installation}")
        return _Token(token, _expiry(answer.get("expires_at")))

    def _call(self, method: str, path: str, what: str) -> dict[str, object]:
        url = self.api_url.rstrip("/") + path
        try:
            response = self.session.request(
                method, url, headers=self._app_headers(), timeout=self.timeout_s
            )
        except requests.RequestException as exc:
            raise GitHubAuthError(f"{what}: GitHub unreachable: {type(exc).__name__}") from exc
        if response.status_code not in (200, 201):
            raise GitHubAuthError(
                f"{what}: GitHub answered {response.status_code} to the App "
                "(wrong App id, revoked key, clock skew, or no access to the repository)"
            )
        body = response.json()
        return body if isinstance(body, dict) else {}
