"""Alerts to a chat (Slack's incoming webhook), rate-limited per suite and hour
(domain/chat/limits.py). The chat is told after the SNS topic, and whatever it answers
(down, refusing, slow) is logged and counted here: it never holds back the topic's alert,
the status or anything else a publication does."""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_lambda_powertools import Logger

from distkpi.domain.chat.limits import Send, held_back, hour_before, hour_of, what_to_send
from distkpi.domain.chat.notices import Notice
from distkpi.domain.chat.slack import limit_message, slack_message
from distkpi.exceptions import ChatError, StorageError
from distkpi.services.ports import Chat, ChatQuota, Clock, Counter, no_metrics, utcnow

logger = Logger(child=True)

DEFAULT_PER_HOUR = 6


@dataclass
class ChatAlerts:
    chat: Chat
    quota: ChatQuota
    per_hour: int = DEFAULT_PER_HOUR
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def send(self, notice: Notice) -> bool:
        """Post the notice (or, over the limit, that the limit was reached, or nothing);
        True when the chat took a message."""
        now = self.clock()
        try:
            taken = self.quota.take(notice.suite, hour_of(now))
            send = what_to_send(taken, self.per_hour)
            if send is Send.NOTHING:
                self.count("ChatMessagesHeldBack")
                logger.info("chat message held back", suite=notice.suite, count=taken)
                return False
            if send is Send.LIMIT_REACHED:
                message = limit_message(notice.suite, self.per_hour)
            else:
                before = self.quota.taken(notice.suite, hour_before(now)) if taken == 1 else 0
                message = slack_message(notice, held_back=held_back(before, self.per_hour))
            self.chat.post(message)
        except (ChatError, StorageError) as exc:
            logger.error("chat message not posted", suite=notice.suite, error=str(exc))
            self.count("ChatFailures")
            return False
        self.count("ChatMessagesPosted")
        logger.info("chat message posted", suite=notice.suite)
        return True
