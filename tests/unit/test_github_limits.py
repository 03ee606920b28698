"""GitHub's limits, without a network: each throttling answer (403 or 429 with
retry-after, x-ratelimit-remaining 0 until its reset) waited out for exactly as long as it
asks and only while there is time left; the paced writer's spacing (a burst, then one write
a second per installation, never more than 80 in any minute); conditional reads (a 304
answers with the answer kept). The clock and the sleeper are injected: nothing is timed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from requests.structures import CaseInsensitiveDict

from distkpi.adapters.github import GitHubStatusClient, TimeBudget
from distkpi.adapters.github_limits import (
    ConditionalReads,
    MemorySlots,
    Rate,
    WritePacer,
    throttle_wait,
)
from distkpi.domain.commit_status import CommitStatus
from distkpi.exceptions import GitHubError, GitHubRateLimitError, GitHubWriteSkipped

STATUS = CommitStatus("o/r", "a" * 40, "success", "distkpi/m", "ok")
NOW = 1_790_000_000.0
SECONDARY = "You have exceeded a secondary rate limit"


class Clock:
    def __init__(self) -> None:
        self.now = NOW
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Answer:
    def __init__(self, code: int, body: Any = None, **headers: str) -> None:
        self.status_code = code
        self.headers = CaseInsensitiveDict({k.replace("_", "-"): v for k, v in headers.items()})
        self.content = b"" if body is None else json.dumps(body).encode()

    def json(self) -> Any:
        return json.loads(self.content)


class ScriptedSession:
    """Answers each request with the next scripted answer, recording what was asked."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, dict[str, str]]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Answer:
        self.asked.append((method, dict(kwargs["headers"])))
        return self.answers.pop(0)


def client(
    session: ScriptedSession, clock: Clock, *, budget: TimeBudget | None = None, **kw: Any
) -> GitHubStatusClient:
    return GitHubStatusClient(
        "https://api.github.test",
        lambda repo: "token",
        session=session,  # type: ignore[arg-type]
        budget=budget,
        clock=clock,
        sleep=clock.sleep,
        **kw,
    )


@pytest.mark.parametrize(
    ("code", "headers", "wait"),
    [
        (403, {"retry-after": "30"}, 30.0),
        (429, {"retry-after": "7"}, 7.0),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 42)}, 42.0),
        (429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 5)}, 0.0),
        (429, {}, 60.0),  # a secondary limit without either: GitHub says wait a minute
        (403, {}, None),  # a refusal, not a limit
        (403, {"x-ratelimit-remaining": "12", "x-ratelimit-reset": str(int(NOW) + 42)}, None),
        (404, {"retry-after": "30"}, None),
    ],
)
def test_how_long_each_throttling_answer_asks_to_wait(
    code: int, headers: dict[str, str], wait: float | None
) -> None:
    assert throttle_wait(code, CaseInsensitiveDict(headers), NOW) == wait


@pytest.mark.parametrize(
    "throttled",
    [
        Answer(403, {"message": SECONDARY}, retry_after="3"),
        Answer(429, {"message": SECONDARY}, retry_after="3"),
        Answer(
            403,
            {"message": "API rate limit exceeded"},
            x_ratelimit_remaining="0",
            x_ratelimit_reset=str(int(NOW) + 3),
        ),
    ],
    ids=["403 retry-after", "429 retry-after", "remaining 0 until reset"],
)
def test_a_throttled_write_is_sent_again_after_the_time_given(throttled: Answer) -> None:
    clock = Clock()
    session = ScriptedSession(throttled, Answer(201, {"id": 1}))
    github = client(session, clock)
    github.post(STATUS)
    assert clock.slept == [3.0]
    assert [method for method, _ in session.asked] == ["POST", "POST"]


def test_a_wait_longer_than_the_time_left_fails_at_once_without_sleeping() -> None:
    clock = Clock()
    session = ScriptedSession(Answer(429, {"message": SECONDARY}, retry_after="30"))
    github = client(session, clock, budget=TimeBudget(5.0, clock))
    with pytest.raises(GitHubRateLimitError, match="retry after 30 s, 5 s left"):
        github.post(STATUS)
    assert clock.slept == []
    assert len(session.asked) == 1


def test_without_a_budget_the_wait_is_bounded_by_max_wait_s() -> None:
    clock = Clock()
    session = ScriptedSession(Answer(403, {"message": SECONDARY}, retry_after="120"))
    with pytest.raises(GitHubRateLimitError):
        client(session, clock, max_wait_s=60.0).post(STATUS)
    assert clock.slept == []


def test_a_403_without_a_limits_headers_is_an_ordinary_refusal() -> None:
    clock = Clock()
    session = ScriptedSession(Answer(403, {"message": "Forbidden"}))
    with pytest.raises(GitHubError, match="GitHub answered 403 for o/r@aaaaaaaaaa"):
        client(session, clock).post(STATUS)
    assert clock.slept == [] and len(session.asked) == 1


def test_throttled_again_and_again_gives_up_after_its_retries() -> None:
    clock = Clock()
    answers = [Answer(429, {"message": SECONDARY}, retry_after="1") for _ in range(4)]
    with pytest.raises(GitHubRateLimitError):
        client(ScriptedSession(*answers), clock).post(STATUS)
    assert clock.slept == [1.0, 1.0, 1.0]


def test_a_burst_goes_at_once_then_one_write_a_second() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), (Rate(1.0, 15),), clock=clock, sleep=clock.sleep)
    waits = [pacer.wait_turn("installation-1", time_left=600.0) for _ in range(20)]
    assert waits[:15] == [0.0] * 15
    assert waits[15:] == [1.0] * 5
    assert clock.now == NOW + 5.0


def busiest(sent: list[float], window_s: float) -> int:
    return max(sum(1 for t in sent if start <= t <= start + window_s) for start in sent)


def test_no_minute_holds_80_writes_nor_an_hour_500_of_one_installation() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), clock=clock, sleep=clock.sleep)
    sent: list[float] = []
    for _ in range(1200):
        pacer.wait_turn("installation-1", time_left=3600.0)
        sent.append(clock.now)
    assert sent[14] == NOW and sent[15] == NOW + 1  # 15 at once, then one a second ...
    assert sent[20] == NOW + 7.5  # ... until the hour's 20: then one every 7.5 s
    assert sent[21] - sent[20] == 7.5
    assert busiest(sent, 60) == 28  # 15 + 5 + 60 / 7.5, under 80
    assert busiest(sent, 3600) == 500
    assert pacer.wait_turn("installation-2", time_left=0.0) == 0.0  # others go on


def test_a_minutes_rate_alone_holds_75_writes_at_most() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), (Rate(1.0, 15),), clock=clock, sleep=clock.sleep)
    sent: list[float] = []
    for _ in range(300):
        pacer.wait_turn("installation-1", time_left=600.0)
        sent.append(clock.now)
    assert busiest(sent, 60) == 75  # a burst of 15, then one a second: at most 15 + 60


def test_a_turn_after_the_time_left_fails_before_sleeping() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), (Rate(1.0, 1),), clock=clock, sleep=clock.sleep)
    pacer.wait_turn("k", time_left=10.0)
    with pytest.raises(GitHubRateLimitError) as refused:
        pacer.wait_turn("k", time_left=0.5)
    assert (
        str(refused.value) == "GitHub writes paced: the next turn is in 1.0 s, after the 0.5 s left"
    )
    assert clock.slept == []


def test_a_turn_taken_only_if_it_is_now_takes_the_burst_then_claims_nothing() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), (Rate(1.0, 3),), clock=clock, sleep=clock.sleep)
    assert [pacer.turn_now("k") for _ in range(5)] == [True, True, True, False, False]
    # the two turns refused claimed no slot: the next write that waits waits one interval
    assert pacer.wait_turn("k", time_left=10.0) == 1.0
    clock.now += 10  # idle since: the burst is back
    assert pacer.turn_now("k") and pacer.turn_now("other")
    assert clock.slept == [1.0]


def test_a_skippable_write_is_left_out_rather_than_wait_for_its_turn_or_a_throttle() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), (Rate(1.0, 1),), clock=clock, sleep=clock.sleep)
    session = ScriptedSession(Answer(201, {}), Answer(429, {"message": SECONDARY}, retry_after="5"))
    github = client(session, clock, pacer=pacer)
    github.post(STATUS, skippable=True)  # the burst's turn: sent
    with pytest.raises(GitHubWriteSkipped, match="GitHub writes paced: POST for o/r left out"):
        github.post(STATUS, skippable=True)  # its turn is a second away: not sent
    assert len(session.asked) == 1
    clock.now += 1
    with pytest.raises(GitHubWriteSkipped, match="GitHub answered 429 to POST for o/r"):
        github.post(STATUS, skippable=True)  # its turn, but GitHub throttles: not retried
    assert len(session.asked) == 2 and clock.slept == []


def test_the_client_paces_writes_and_never_reads() -> None:
    clock = Clock()
    pacer = WritePacer(MemorySlots(), (Rate(1.0, 1),), clock=clock, sleep=clock.sleep)
    compare = {"merge_base_commit": {"sha": "b" * 40}, "files": [{"filename": "a.py"}]}
    session = ScriptedSession(
        Answer(201, {"id": 1}), Answer(201, {"id": 2}), Answer(200, compare), Answer(200, compare)
    )
    keys: list[str] = []

    def installation_of(repo: str) -> str:
        keys.append(repo)
        return "installation-1"

    github = client(session, clock, pacer=pacer, pace_key=installation_of)
    github.post(STATUS)
    github.post(STATUS)
    github.compare("o/r", "a" * 40, "c" * 40)
    github.compare("o/r", "b" * 40, "c" * 40)
    assert clock.slept == [1.0]  # the second write waited its turn; the reads did not
    assert keys == ["o/r", "o/r"]


def test_a_repeated_read_is_conditional_and_a_304_reuses_the_answer_kept() -> None:
    clock = Clock()
    commit = {"sha": "c" * 40, "parents": [{"sha": "b" * 40}]}
    session = ScriptedSession(Answer(200, commit, ETag='W/"v1"'), Answer(304))
    counted: list[str] = []
    github = client(session, clock, count=counted.append)
    assert github.commit_parents("o/r", "c" * 40) == ("b" * 40,)
    assert github.commit_parents("o/r", "c" * 40) == ("b" * 40,)
    first, second = (headers for _, headers in session.asked)
    assert "If-None-Match" not in first
    assert second["If-None-Match"] == 'W/"v1"'
    assert counted == ["GitHubNotModified"]


def test_conditional_reads_keep_the_newest_answers_only() -> None:
    reads = ConditionalReads(capacity=2)
    for n in range(3):
        reads.keep(f"u{n}", f"e{n}", n)
    assert reads.etag("u0") is None
    assert (reads.etag("u2"), reads.answer("u2")) == ("e2", 2)
