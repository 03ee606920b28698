"""The suite's golden loss curve (`golden: FILE`, a file of the repository under test, which
the launcher passes as DISTKPI_GOLDEN): the main node copies it out of its checkout before
the setup or the command runs, and uploads the copy with its files as `<config>/golden.json`,
so its manifest names the copy's sha256 and signs it like every other file.

Only a regular file inside the checkout is copied: a link, or a path that leads out of the
checkout, could otherwise upload what the runner may read and the code may not.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from distkpi.domain.planning import jobenv

VARIABLE = jobenv.GOLDEN
NAME = "golden.json"  # where it lands in the config folder (runfolder.GOLDEN_FILE)
MAX_BYTES = 4 << 20  # a golden curve holds at most 10,000 steps (domain/kpis/golden.py)


def copy_golden(env: Mapping[str, str], checkout: Path, work: Path) -> str | None:
    """Copy the suite's golden file from ``checkout`` to ``work``/golden.json; what went
    wrong, for the node's log, when it cannot (None: copied, or no golden file asked for)."""
    wanted = env.get(VARIABLE)
    if not wanted:
        return None
    root = checkout.resolve()
    path = (root / wanted).resolve()
    if not path.is_relative_to(root):
        return f"golden curve {wanted}: not a file of the checkout"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"golden curve {wanted}: {exc.strerror} in the checkout"
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return f"golden curve {wanted}: not a regular file"
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return f"golden curve {wanted}: over {MAX_BYTES} bytes, not uploaded"
    (work / NAME).write_bytes(raw)
    return None


def golden_copy(work: Path) -> Path | None:
    copy = work / NAME
    return copy if copy.is_file() else None
