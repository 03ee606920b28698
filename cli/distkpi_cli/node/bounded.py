"""A process of the code under test (a setup command, the command) run with bounds: stdin
from /dev/null, its output drained into the node's log (node/drain.py), a deadline at which
its process group is killed, and, once it has ended, whatever it left running stopped
before the rest of its output is read, so that nothing it leaves behind can hang the node."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distkpi.domain.contracts import MAX_LOG_BYTES
from distkpi_cli.node.drain import Drain

GRACE_S = 10.0  # between SIGTERM and SIGKILL at a deadline
DRAIN_S = 30.0  # for the output's end once nothing of the code runs
NOTES_ROOM = 1 << 16  # left in a full log for the runner's own lines


@dataclass(frozen=True)
class Ended:
    code: int | None  # None: still running at its deadline, and stopped
    note: str | None  # what went missing of its output, if anything
    log_error: str | None  # the log could not be written (a full disk)


def run_bounded(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    timeout_s: float | None,
    *,
    spawn: Mapping[str, Any] | None = None,
    stop_the_rest: Callable[[], None] | None = None,
    echo: bool = True,
    prefix: Sequence[str] = (),
) -> Ended:
    """Run ``args`` (after ``prefix``: a namespace of its own); OSError when it cannot
    start. ``stop_the_rest``: stops every process of the code (else its process group is
    killed once it has exited)."""
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            [*prefix, *args],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=write,
            **(spawn or {"start_new_session": True}),  # its own group, stopped as one
        )
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    with log.open("ab", buffering=0) as out:
        room = max(0, MAX_LOG_BYTES - NOTES_ROOM - out.tell())
        drain = Drain(read, out, getattr(sys.stdout, "buffer", None) if echo else None, room)
        drain.start()
        code: int | None
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            code = None
        _kill_group(proc.pid)  # what it left in its group, such as `server &`
        if stop_the_rest is not None:
            stop_the_rest()
        if not drain.join(DRAIN_S):
            drain.error = drain.error or "its output was still open after it ended"
    return Ended(code, drain.note(), drain.error)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _stop_group(proc: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue
