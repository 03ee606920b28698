"""The GitHub writers' slots per installation, shared by every container of every function
(adapters/github_limits.Slots): one item per key holding the next free slot, moved by an
atomic conditional update, so that no two writers get the same slot."""

from __future__ import annotations

from decimal import Decimal

from distkpi.adapters.dynamo import keys
from distkpi.adapters.dynamo.table import DynamoTable
from distkpi.exceptions import StorageError

KEPT_S = 3600  # an idle key's item goes (TTL); the next write starts it again
ATTEMPTS = 5


def _decimal(seconds: float) -> Decimal:
    return Decimal(f"{seconds:.3f}")


class PaceSlots:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def claim(self, key: str, now: float, interval_s: float) -> float:
        """The key's next slot when it is still ahead of ``now`` (moved on by one interval),
        else ``now`` (the next slot set one interval after it)."""
        slot = self._claim(key, now, interval_s, None)
        assert slot is not None  # with no latest, a claim is never refused
        return slot

    def claim_by(self, key: str, now: float, interval_s: float, latest: float) -> bool:
        """As ``claim``, only when the slot it gives is at ``latest`` or before."""
        return self._claim(key, now, interval_s, latest) is not None

    def _claim(self, key: str, now: float, interval_s: float, latest: float | None) -> float | None:
        """The slot claimed; None when it would be after ``latest``, nothing claimed."""
        values = {":i": _decimal(interval_s), ":now": _decimal(now)}
        ahead = "next_slot >= :now"
        if latest is not None:
            values[":latest"] = _decimal(latest)
            ahead = "next_slot BETWEEN :now AND :latest"
        expires = {":exp": int(now) + KEPT_S}
        for _ in range(ATTEMPTS):
            moved = self.table.conditional(
                Key=keys.pace(key),
                UpdateExpression="SET next_slot = next_slot + :i, expires_at = :exp",
                ConditionExpression=ahead,
                ExpressionAttributeValues={**values, **expires},
                ReturnValues="UPDATED_NEW",
            )
            if moved is not None:
                return float(moved["Attributes"]["next_slot"]) - interval_s
            started = self.table.conditional(
                Key=keys.pace(key),
                UpdateExpression="SET next_slot = :next, expires_at = :exp",
                ConditionExpression="attribute_not_exists(next_slot) OR next_slot < :now",
                ExpressionAttributeValues={
                    ":now": values[":now"],
                    ":next": _decimal(now + interval_s),
                    **expires,
                },
            )
            if started is not None:
                return now
            if latest is not None and not self._before(key, latest):
                return None
        raise StorageError(f"no GitHub write slot for {key} after {ATTEMPTS} attempts")

    def _before(self, key: str, latest: float) -> bool:
        """Whether the key's next slot is (still) at ``latest`` or before: both conditions
        failing means another writer moved it in between, or it is past ``latest``."""
        item = self.table.get(keys.pace(key), consistent=True) or {}
        next_slot = item.get("next_slot")
        return next_slot is None or float(next_slot) <= latest
