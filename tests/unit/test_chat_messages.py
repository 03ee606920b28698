"""Slack messages of alerts, pinned by golden files (the seed run's regression on develop, a
bisection's culprit, a hostile run), the rate limit, the webhook secret's reading and the
topic's message per protocol (tests/integration/test_chat_webhook.py posts them)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from distkpi.adapters.slack import webhook_url
from distkpi.domain.bisect.deciding import Ends
from distkpi.domain.bisect.line import Commit
from distkpi.domain.bisect.plan import Bisection, BisectState
from distkpi.domain.chat.limits import Send, held_back, hour_before, hour_of, what_to_send
from distkpi.domain.chat.notices import culprit_notice, regression_notice
from distkpi.domain.chat.slack import limit_message, slack_message
from distkpi.domain.github.alerts import Alerted
from distkpi.exceptions import ChatError
from tests.conftest import RunBuilder
from tests.unit.test_check_summary import REPORT, regressed_evaluation
from tests.unit.test_hostile_text import hostile_evaluation

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
ALERTED = Alerted("PaddlePaddle/Paddle", "develop", "resnet50", SHA)


def golden(name: str, message: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(message, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("DISTKPI_UPDATE_GOLDEN") == "1":  # to accept a change on purpose
        (GOLDEN / name).write_text(text)
    return json.loads((GOLDEN / name).read_text())


def test_a_regression_on_develop_is_the_golden_slack_message() -> None:
    notice = regression_notice(
        regressed_evaluation(),
        ALERTED,
        ("@octocat", "@PaddlePaddle/perf"),
        web_url="https://github.com",
        report_url=REPORT,
    )
    message = slack_message(notice)
    assert message == golden("slack_regression.json", message)
    assert [b["type"] for b in message["blocks"]] == [
        "header",
        "section",
        "section",
        "section",
        "actions",
    ]
    assert "*For:* @octocat @PaddlePaddle/perf" in json.dumps(message)


def bisection() -> Bisection:
    line = (
        Commit("1" * 40, "Ada", "docs: typo"),
        Commit("2" * 40, "Bob <b>", "ops: fuse <!channel> kernels", login="bob-dev"),
        Commit(SHA, "Cy", "merge"),
    )
    return Bisection(
        repo="PaddlePaddle/Paddle",
        branch="develop",
        model="resnet50",
        bad_run_id="run-0042",
        good="0" * 40,
        bad=SHA,
        configs=("4x8-8ps",),
        line=line,
        ends=(Ends("4x8-8ps", "throughput", 3044.0, 2345.3, ()),),
        max_runs=4,
        created_at="2026-11-30T03:00:00.000",
        state=BisectState.FOUND,
        culprit="2" * 40,
        why=f"{'2' * 10} is bad and its parent good",
    )


def test_a_bisections_culprit_mentions_its_author_and_escapes_what_people_wrote() -> None:
    notice = culprit_notice(
        bisection(), ("@octocat",), web_url="https://github.com", report_url=REPORT
    )
    message = slack_message(notice)
    assert message == golden("slack_culprit.json", message)
    assert notice.mentions == ("@octocat", "@bob-dev")
    text = json.dumps(message)
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert "Bob &lt;b&gt;" in text


def test_a_hostile_description_reaches_slack_as_plain_text(run_builder: RunBuilder) -> None:
    notice = regression_notice(
        hostile_evaluation(run_builder), ALERTED, (), web_url="https://github.com", report_url=None
    )
    summary = slack_message(notice)["blocks"][1]["text"]["text"]
    assert "<" not in summary and "https://ev.il" not in summary and "@org" not in summary


def test_a_long_table_stays_within_slacks_section_limit() -> None:
    evaluation = regressed_evaluation()
    notice = regression_notice(
        evaluation, ALERTED, (), web_url="https://github.com", report_url=None
    )
    many = notice.rows * 200
    from dataclasses import replace

    message = slack_message(replace(notice, rows=many))
    assert all(len(b["text"]["text"]) <= 3000 for b in message["blocks"] if b["type"] == "section")


@pytest.mark.parametrize(
    ("count", "send"),
    [(1, Send.MESSAGE), (3, Send.MESSAGE), (4, Send.LIMIT_REACHED), (5, Send.NOTHING)],
)
def test_at_most_the_limit_then_one_notice_then_nothing(count: int, send: Send) -> None:
    assert what_to_send(count, 3) is send


def test_hours_are_utc_and_the_held_back_are_those_over_the_limit() -> None:
    at = datetime(2026, 12, 1, 0, 30, tzinfo=UTC)
    assert (hour_of(at), hour_before(at)) == ("2026-12-01T00", "2026-11-30T23")
    assert (held_back(2, 3), held_back(5, 3)) == (0, 2)
    assert "3 alerts this hour" in limit_message("PaddlePaddle/Paddle/resnet50", 3)["text"]


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ("ftp://hooks.example/x", "the chat webhook's secret holds no https URL"),
        ('{"url": "http://hooks.example/x"}', "the chat webhook's secret holds no https URL"),
        ("{not json", "the chat webhook's secret is not JSON nor a URL"),
    ],
)
def test_a_secret_without_an_https_url_is_refused_naming_no_secret(
    secret: str, problem: str
) -> None:
    with pytest.raises(ChatError) as raised:
        webhook_url(secret)
    assert str(raised.value) == problem


def test_the_topic_sends_text_and_amazon_q_its_custom_notification() -> None:
    from distkpi.adapters.sns import AlertTopic

    class Sns:
        def __init__(self) -> None:
            self.published: list[dict[str, Any]] = []

        def publish(self, **request: Any) -> None:
            self.published.append(request)

    sns = Sns()
    AlertTopic("arn:aws:sns:us-east-1:123456789012:regressions", sns).publish("subject", "body\n")
    ((request),) = sns.published
    assert request["MessageStructure"] == "json" and request["Subject"] == "subject"
    message = json.loads(request["Message"])
    assert message["default"] == "body\n"  # e-mail, queues: the text
    assert json.loads(message["https"]) == {  # Amazon Q Developer subscribes over HTTPS
        "version": "1.0",
        "source": "custom",
        "content": {"textType": "client-markdown", "title": "subject", "description": "body\n"},
    }
