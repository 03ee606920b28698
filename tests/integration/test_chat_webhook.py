"""The Slack webhook adapter against the chat stand-in on 127.0.0.1: a message is posted as
Slack takes it, and the webhook's URL (the secret) is in no message and no error; a chat
that refuses, cannot be reached or does not answer in time is a ChatError."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from distkpi.adapters.slack import SlackWebhook
from distkpi.domain.chat.notices import regression_notice
from distkpi.domain.chat.slack import slack_message
from distkpi.exceptions import ChatError
from distkpi_cli.local.chat_standin import ChatStandIn
from tests.unit.test_chat_messages import ALERTED
from tests.unit.test_check_summary import REPORT, regressed_evaluation


@pytest.fixture
def chat() -> Iterator[ChatStandIn]:
    standin = ChatStandIn()
    standin.start()
    yield standin
    standin.stop()


def test_the_webhook_posts_the_message_as_slack_takes_it(chat: ChatStandIn) -> None:
    message = slack_message(
        regression_notice(
            regressed_evaluation(), ALERTED, (), web_url="https://github.com", report_url=REPORT
        )
    )
    SlackWebhook(lambda: json.dumps({"url": chat.url})).post(message)
    assert chat.messages == [message]
    assert chat.path not in json.dumps(chat.messages)


def test_a_chat_that_refuses_is_an_error_that_never_names_the_url(chat: ChatStandIn) -> None:
    chat.fail_next(503, 503, 503)
    with pytest.raises(ChatError) as raised:
        SlackWebhook(lambda: chat.url, backoff_s=0).post({"text": "x"})
    assert str(raised.value) == "Slack answered 503"
    assert chat.messages == [] and chat.refused == 3  # the first try and two retries


def test_a_chat_that_cannot_be_reached_is_an_error_that_never_names_the_url() -> None:
    standin = ChatStandIn()
    url = standin.start()
    standin.stop()  # nothing listens there now
    with pytest.raises(ChatError) as raised:
        SlackWebhook(lambda: url, retries=0).post({"text": "x"})
    assert str(raised.value) == "Slack unreachable: ConnectionError"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_chat_that_does_not_answer_in_time_is_an_error() -> None:
    answered = threading.Event()

    class Silent(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            answered.wait(5)  # answers only once the test is done

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/services/T0/B0/secret-token"
        with pytest.raises(ChatError) as raised:
            SlackWebhook(lambda: url, retries=0, timeout_s=(1.0, 0.2)).post({"text": "x"})
        # requests reports a read timeout its retry gave up on as a ConnectionError
        assert str(raised.value) in (
            "Slack unreachable: ReadTimeout",
            "Slack unreachable: ConnectionError",
        )
        assert "secret-token" not in str(raised.value)
    finally:
        answered.set()
        server.shutdown()
        server.server_close()


def test_what_was_posted_is_read_back_over_http_and_only_there(chat: ChatStandIn) -> None:
    from distkpi_cli.local.chat_standin import RemoteChat

    SlackWebhook(lambda: chat.url).post({"text": "first"})
    assert RemoteChat(chat.base_url).messages == [{"text": "first"}]
    # the read-back is no webhook: a post there is refused
    with pytest.raises(ChatError, match="Slack answered 404"):
        SlackWebhook(lambda: f"{chat.base_url}/_standin/messages", retries=0).post({"text": "x"})
