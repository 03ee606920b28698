"""EventBridge "Batch Job State Change", FAILED or SUCCEEDED: settle the job's config when
its nodes cannot tell the collector any more than they have."""

from __future__ import annotations

from typing import Any

from distkpi.entry.observability import logger
from distkpi.entry.wiring import fanin


def handle_event(event: dict[str, Any]) -> bool:
    """True when the event settled (or had already settled) a config of ours."""
    detail = event.get("detail") or {}
    status, job_id = detail.get("status"), str(detail.get("jobId") or "")
    logger.append_keys(job_id=job_id)
    if status == "FAILED" and job_id:
        reason = detail.get("statusReason") or "no reason given by Batch"
        return fanin().settler.on_job_failed(job_id, str(reason))
    # A node of a multi-node job (<job>#<node>) succeeds while the others may still run.
    if status == "SUCCEEDED" and job_id and "#" not in job_id:
        return fanin().settler.on_job_succeeded(job_id)
    logger.info("job event ignored", status=status)
    return False
