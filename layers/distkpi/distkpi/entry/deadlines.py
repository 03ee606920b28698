"""The overdue runs the sweeper handed over (services/deadlines.py), each settled here."""

from __future__ import annotations

import json
from typing import Any

from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import deadlines


def handle_messages(event: dict[str, Any]) -> dict[str, Any]:
    """Each record's run settled; the records that failed, for SQS to give again."""
    failures: list[dict[str, str]] = []
    settled = 0
    for record in event.get("Records", []):
        message_id = str(record.get("messageId", ""))
        try:
            run_id = json.loads(record["body"])["run_id"]
            logger.append_keys(run_id=run_id)
            settled += deadlines().deadlines.expire(str(run_id))
        except Exception:  # one run's failure must not hold up the others of the batch
            logger.exception("overdue run not settled; SQS gives it again", message_id=message_id)
            count("SweepFailures")
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures, "settled": settled}
