"""The webhook answers within GitHub's 10 s: its GitHub calls share a time budget per
delivery, each attempt's timeouts fit in what is left, and none starts once it is spent."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import requests

from distkpi.adapters.github import GitHubStatusClient, TimeBudget
from distkpi.domain.commit_status import CommitStatus
from distkpi.exceptions import GitHubError

STATUS = CommitStatus("o/r", "a" * 40, "pending", "distkpi/m", "running")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class RecordingSession:
    """Stands in for requests' session: records the timeouts each attempt was given."""

    def __init__(self) -> None:
        self.timeouts: list[tuple[float, float]] = []

    def request(self, method: str, url: str, **kwargs: object) -> object:
        self.timeouts.append(kwargs["timeout"])  # type: ignore[arg-type]
        raise requests.ConnectionError("down")


def client(budget: TimeBudget, session: RecordingSession, retries: int = 1) -> GitHubStatusClient:
    return GitHubStatusClient(
        "http://127.0.0.1:9",
        lambda repo: "token",
        session=session,  # type: ignore[arg-type]
        retries=retries,
        timeout_s=(3.05, 10.0),
        budget=budget,
    )


def test_each_attempt_gets_its_share_of_what_is_left() -> None:
    clock, session = FakeClock(), RecordingSession()
    budget = TimeBudget(5.0, clock)
    github = client(budget, session, retries=1)
    with pytest.raises(GitHubError):
        github.post(STATUS)
    clock.now += 3.0
    with pytest.raises(GitHubError):
        github.post(STATUS)
    assert session.timeouts == [(2.5, 2.5), (1.0, 1.0)]


def test_no_call_starts_once_the_budget_is_spent_and_a_new_delivery_starts_afresh() -> None:
    clock, session = FakeClock(), RecordingSession()
    budget = TimeBudget(5.0, clock)
    github = client(budget, session)
    clock.now += 5.0
    with pytest.raises(GitHubError, match="no time left"):
        github.post(STATUS)
    assert session.timeouts == []
    budget.start()
    with pytest.raises(GitHubError, match="unreachable"):
        github.post(STATUS)
    assert len(session.timeouts) == 1


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_github_that_never_answers_costs_at_most_the_budget(silent_server: str) -> None:
    github = GitHubStatusClient(
        silent_server, lambda repo: "t", retries=0, timeout_s=(3.05, 10.0), budget=TimeBudget(0.3)
    )
    with pytest.raises(GitHubError, match="unreachable"):
        github.post(STATUS)
    with pytest.raises(GitHubError, match="no time left"):
        github.post(STATUS)
