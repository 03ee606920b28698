"""Slack through an incoming webhook: one POST of a Block Kit message. The webhook's URL is
the secret (whoever has it can post to the channel), read from Secrets Manager when a
message goes out; no error, log or message ever carries it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from distkpi.exceptions import ChatError

RETRY_ON = (429, 500, 502, 503, 504)


def webhook_url(secret: str) -> str:
    """The URL a secret holds: the URL itself, or JSON with a `url` (or `webhook_url`)."""
    text = secret.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ChatError("the chat webhook's secret is not JSON nor a URL") from exc
        text = (
            str(data.get("url") or data.get("webhook_url") or "") if isinstance(data, dict) else ""
        )
    if not text.startswith(("https://", "http://127.0.0.1:", "http://localhost:")):
        raise ChatError("the chat webhook's secret holds no https URL")
    return text


class SlackWebhook:
    def __init__(
        self,
        secret: Callable[[], str],
        *,
        session: requests.Session | None = None,
        retries: int = 2,
        backoff_s: float = 0.5,
        timeout_s: tuple[float, float] = (3.05, 5.0),
    ) -> None:
        self._secret = secret
        self.timeout_s = timeout_s
        if session is None:
            retry = Retry(
                total=retries,
                backoff_factor=backoff_s,
                status_forcelist=RETRY_ON,
                allowed_methods=frozenset({"POST"}),
                respect_retry_after_header=False,  # Slack's may ask for minutes: not here
                raise_on_status=False,
            )
            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=retry))
            session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session = session

    def post(self, message: dict[str, Any]) -> None:
        url = webhook_url(self._secret())
        try:
            response = self.session.post(url, json=message, timeout=self.timeout_s)
        except requests.RequestException as exc:
            # not chained: a requests error's text names the URL
            raise ChatError(f"Slack unreachable: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise ChatError(f"Slack answered {response.status_code}")
