"""The GitHub App's installations and their tokens, kept for every container of every
function: a repository's installation for a month, a token until it expires (the table's
TTL attribute removes both)."""

from __future__ import annotations

import time

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable

INSTALLATION_KEPT_S = 30 * 24 * 3600


class AppTokenRepository:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def installation(self, repo: str) -> int | None:
        item = self.table.get(keys.app_installation(repo))
        found = item.get("installation") if item is not None else None
        return int(found) if found is not None else None

    def keep_installation(self, repo: str, installation: int) -> None:
        self.table.put(
            {
                **keys.app_installation(repo),
                "installation": installation,
                "expires_at": int(time.time()) + INSTALLATION_KEPT_S,
            }
        )

    def token(self, installation: int) -> tuple[str, float] | None:
        item = self.table.get(keys.app_token(installation))
        if item is None or not item.get("token"):
            return None
        return str(item["token"]), float(item["token_expires_at"])

    def keep_token(self, installation: int, token: str, expires_at: float) -> None:
        self.table.put(
            {
                **keys.app_token(installation),
                "token": token,
                "token_expires_at": expires_at,
                "expires_at": int(expires_at) + 1,
            }
        )

    def forget(self, repo: str, installation: int | None) -> None:
        """GitHub refused the token: both are written over empty (a put, as every other
        write of these items: the functions may not delete)."""
        gone = {"expires_at": int(time.time())}
        self.table.put({**keys.app_installation(repo), **gone})
        if installation is not None:
            self.table.put({**keys.app_token(installation), **gone})
