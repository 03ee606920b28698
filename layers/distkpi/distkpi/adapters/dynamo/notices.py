"""What the pull-request comments and the chat keep: a suite's comment per pull request (its
id and the outcome it shows), and the chat messages sent per suite and hour."""

from __future__ import annotations

import time

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable
from distkpi.domain.github.pr_comment import KeptComment

COMMENT_TTL_S = 90 * 24 * 3600  # as a pull request's runs
CHAT_TTL_S = 2 * 24 * 3600  # an hour's count is read in that hour and the next only


class CommentRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def get(self, repo: str, number: int, suite: str) -> KeptComment | None:
        item = self.table.get(keys.comment(repo, number, suite), consistent=True)
        if item is None:
            return None
        return KeptComment(int(item["comment_id"]), str(item.get("outcome") or ""))

    def keep(self, repo: str, number: int, suite: str, comment: KeptComment) -> None:
        self.table.put(
            {
                **keys.comment(repo, number, suite),
                "comment_id": comment.comment_id,
                "outcome": comment.outcome,
                "expires_at": int(time.time()) + COMMENT_TTL_S,
            }
        )


class ChatQuotaRepository:
    """A counter per suite (``repo/model``) and hour, added to atomically (ADD)."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def take(self, suite: str, hour: str) -> int:
        answer = self.table.conditional(
            Key=keys.chat_hour(suite, hour),
            UpdateExpression="ADD sent :one SET expires_at = if_not_exists(expires_at, :ttl)",
            ExpressionAttributeValues={":one": 1, ":ttl": int(time.time()) + CHAT_TTL_S},
            ReturnValues="UPDATED_NEW",
        )
        return int((answer or {}).get("Attributes", {}).get("sent", 1))

    def taken(self, suite: str, hour: str) -> int:
        item = self.table.get(keys.chat_hour(suite, hour), consistent=True) or {}
        return int(item.get("sent") or 0)
