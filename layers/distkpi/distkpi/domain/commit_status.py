"""The commit status contract: its states, GitHub's 140-character description, `pending`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

MAX_DESCRIPTION = 140


class State(StrEnum):
    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"


@dataclass(frozen=True)
class CommitStatus:
    repo: str
    sha: str
    state: str
    context: str
    description: str
    target_url: str | None = None


def clip(text: str, limit: int = MAX_DESCRIPTION) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pending_description(configs: int, gpus: int) -> str:
    return clip(f"running {configs} config(s), up to {gpus} GPUs")


def confirming_description(configs: Sequence[str], attempt: int, max_runs: int) -> str:
    return clip(f"confirming {', '.join(configs)}: run {attempt} of up to {max_runs}")
