"""EventBridge "Batch Job State Change": RUNNING starts its run's deadline (the queue wait
is over); FAILED or SUCCEEDED settle the job's config when its nodes cannot tell the
collector any more than they have."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from distkpi.entry.observability import logger
from distkpi.entry.wiring import fanin


def handle_event(event: dict[str, Any]) -> bool:
    """True when the event settled (or had already settled) a config of ours."""
    detail = event.get("detail") or {}
    status, job_id = detail.get("status"), str(detail.get("jobId") or "")
    logger.append_keys(job_id=job_id)
    if status == "RUNNING" and job_id:
        fanin().services.job_starts.on_job_running(job_id, _started_at(event, detail))
        return False
    if status == "FAILED" and job_id:
        reason = detail.get("statusReason") or "no reason given by Batch"
        return fanin().settler.on_job_failed(job_id, str(reason))
    # A node of a multi-node job (<job>#<node>) succeeds while the others may still run.
    if status == "SUCCEEDED" and job_id and "#" not in job_id:
        return fanin().settler.on_job_succeeded(job_id)
    logger.info("job event ignored", status=status)
    return False


def _started_at(event: dict[str, Any], detail: dict[str, Any]) -> str:
    """When the job started: Batch's `startedAt` (epoch milliseconds), else the event's
    time, as the run items write times (ISO, milliseconds, UTC)."""
    started = detail.get("startedAt")
    if isinstance(started, int | float) and not isinstance(started, bool):
        at = datetime.fromtimestamp(started / 1000, UTC)
    else:
        try:
            at = datetime.fromisoformat(str(event.get("time") or "").replace("Z", "+00:00"))
        except ValueError:
            at = datetime.now(UTC)
    return at.astimezone(UTC).isoformat(timespec="milliseconds")
