"""Asking GitHub for a repository_dispatch event (REST: "Create a repository dispatch
event"), which GitHub then delivers to the repository's webhooks."""

from __future__ import annotations

from typing import Any

from distkpi.domain.github.webhook import CALIBRATE_EVENT_TYPE
from distkpi.exceptions import GitHubError

TIMEOUT_S = 30


def ask_calibration(api_url: str, repo: str, token: str, client_payload: dict[str, Any]) -> None:
    """POST /repos/{owner}/{repo}/dispatches with event_type distkpi-calibrate."""
    ask_dispatch(api_url, repo, token, CALIBRATE_EVENT_TYPE, client_payload)


def ask_dispatch(
    api_url: str, repo: str, token: str, event_type: str, client_payload: dict[str, Any]
) -> None:
    """POST /repos/{owner}/{repo}/dispatches; GitHub answers 204 with no body. Never
    retried: a second POST would be a second delivery, doing its work again."""
    import requests

    url = f"{api_url.rstrip('/')}/repos/{repo}/dispatches"
    headers = {
        "Accept": "application/vnd.github+json",
        "Authorization": f"Bearer {token}",
        "X-GitHub-Api-Version": "2022-11-28",
    }
    body = {"event_type": event_type, "client_payload": client_payload}
    try:
        answer = requests.post(url, json=body, headers=headers, timeout=TIMEOUT_S)
    except requests.RequestException as exc:
        raise GitHubError(f"POST {url}: {exc}") from exc
    if answer.status_code != 204:
        try:
            message = answer.json().get("message", answer.text)
        except ValueError:
            message = answer.text
        raise GitHubError(f"POST {url}: GitHub answered {answer.status_code}: {message}")
