"""A node's logs kept to what the collector parses: a log or GPU file over the cap is cut
at the last line break before it, and the node's manifest says how much was cut."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_PROBE = 1 << 16  # how far back from the cap a line break is looked for


def cap_file(path: Path, limit: int) -> int | None:
    """Cut ``path`` to at most ``limit`` bytes, at a line break when one is near; the bytes
    cut off, or None when it was within the limit."""
    size = path.stat().st_size
    if size <= limit:
        return None
    keep = limit
    with path.open("rb") as f:
        start = max(0, limit - TAIL_PROBE)
        f.seek(start)
        newline = f.read(limit - start).rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
    os.truncate(path, keep)
    return size - keep
