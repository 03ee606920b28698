"""`distkpi local up`: the local stack kept running in the foreground on fixed ports, with
its state folder, until Ctrl-C; `distkpi local` and the `--local` history commands use it
while it is up. It saves the state when it stops."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TextIO

from distkpi_cli.local.attach import RunningStack, running
from distkpi_cli.local.chat_standin import ChatStandIn
from distkpi_cli.local.stack import local_stack
from distkpi_cli.local.state import StateError, StateFolder


def serve(
    suite: Path,
    state: StateFolder,
    port: int,
    *,
    fresh: bool = False,
    progress: TextIO = sys.stderr,
    stop: threading.Event | None = None,
    repository: Path | None = None,
) -> int:
    """Up until ``stop`` is set (Ctrl-C or SIGTERM set it); then the state is saved. Its
    GitHub serves ``repository`` (default this checkout)."""
    if (up := running(state)) is not None:
        raise StateError(f"{state.path} is already up (pid {up.pid}, {up.endpoint})")
    stop = stop or _stopped_by_signals()
    opened = local_stack(
        suite, progress, state=state, fresh=fresh, port=port, repository=repository
    )
    with opened as stack:
        held = RunningStack(
            stack.aws.endpoint,
            stack.github.url,
            os.getpid(),
            dataclasses.asdict(stack.aws),
            stack.chat.base_url if isinstance(stack.chat, ChatStandIn) else "",
        )
        # it holds the stack's key: its owner's alone
        fd = os.open(state.up_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as up_file:
            up_file.write(json.dumps(held.to_json()))
        try:
            print(f"AWS (moto): {stack.aws.endpoint}", flush=True)
            print(f"GitHub:     {stack.github.url}", flush=True)
            print(f"state:      {state.path} (saved when this stops: Ctrl-C)", flush=True)
            stop.wait()
        finally:
            state.up_file.unlink(missing_ok=True)
    return 0


def _stopped_by_signals() -> threading.Event:
    stop = threading.Event()

    def handle(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)
    return stop
