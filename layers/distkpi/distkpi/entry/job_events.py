"""EventBridge "Batch Job State Change" with status FAILED: the config failed."""

from __future__ import annotations

from typing import Any

from distkpi.entry.observability import logger
from distkpi.entry.wiring import wiring


def handle_event(event: dict[str, Any]) -> bool:
    detail = event.get("detail") or {}
    if detail.get("status") != "FAILED" or not detail.get("jobId"):
        logger.info("job event ignored", status=detail.get("status"))
        return False
    reason = detail.get("statusReason") or "no reason given by Batch"
    logger.append_keys(job_id=detail["jobId"])
    return wiring().fanin.on_job_failed(str(detail["jobId"]), str(reason))
