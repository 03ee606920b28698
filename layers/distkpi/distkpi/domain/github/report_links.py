"""Report links that last and stay private: `<base>/reports/<run_id>?exp=<unix>&sig=<hmac>`.

The link is signed with a key only the stack holds, so nobody can make one for a run they
were not shown, and it expires (a year by default) without any state to keep. It is shown
only in the repository's checks and statuses, so only people who may read the repository
see it. Following it redirects to a presigned S3 URL that lives minutes, made fresh each
time: the report object itself is never public, and no link in GitHub ever goes stale the
way a presigned URL written into a status does.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import quote

LINK_LIFETIME_S = 365 * 24 * 3600
RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def _signature(key: bytes, run_id: str, expires: int) -> str:
    return hmac.new(key, f"{run_id}\0{expires}".encode(), hashlib.sha256).hexdigest()


def report_link(
    base: str, key: bytes, run_id: str, now: float, lifetime_s: int = LINK_LIFETIME_S
) -> str:
    expires = int(now) + lifetime_s
    signature = _signature(key, run_id, expires)
    return f"{base.rstrip('/')}/reports/{quote(run_id)}?exp={expires}&sig={signature}"


def link_problem(
    key: bytes, run_id: str, expires: str | None, signature: str | None, now: float
) -> str | None:
    """Why a report link is not honoured, or None when it is."""
    if not RUN_ID.fullmatch(run_id):
        return "not a run id"
    if not expires or not expires.isdigit() or not signature:
        return "the link is not signed"
    if not hmac.compare_digest(_signature(key, run_id, int(expires)), signature):
        return "the link's signature does not match"
    if int(expires) < now:
        return "the link has expired"
    return None
