"""The output of the code under test, read whatever it holds: in chunks (a line of any
length costs one chunk of memory), written to the node's log up to the cap the upload
applies, echoed up to the same cap, and read to its end even when the log cannot be
written (a full disk): the error is kept and said, the code never blocks on a full pipe."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import IO

CHUNK_BYTES = 1 << 16


@dataclass
class Drain:
    """Copies ``fd`` (a pipe's read end, which it closes at its end) into ``log`` and
    ``echo`` in a thread of its own."""

    fd: int
    log: IO[bytes]
    echo: IO[bytes] | None
    cap: int  # bytes written to the log at most (and echoed at most)
    written: int = 0
    dropped: int = 0  # read past the cap, or not written
    error: str | None = None  # the first write error of the log
    _thread: threading.Thread = field(init=False, repr=False)

    def start(self) -> Drain:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while chunk := os.read(self.fd, CHUNK_BYTES):
                self._write(chunk)
        except OSError as exc:  # the pipe itself: nothing more to read
            self.error = self.error or f"reading the output: {exc.strerror}"
        finally:
            os.close(self.fd)

    def _write(self, chunk: bytes) -> None:
        room = max(0, self.cap - self.written) if self.error is None else 0
        kept, self.dropped = chunk[:room], self.dropped + len(chunk) - min(room, len(chunk))
        if not kept:
            return
        try:
            self._write_all(kept)
        except (OSError, ValueError) as exc:  # ValueError: closed, the node gave up on it
            self.error = f"the node's log cannot be written: {getattr(exc, 'strerror', exc)}"
            self.dropped += len(kept)  # (what of it was written stays in the log)
        if self.echo is not None:
            try:
                self.echo.write(kept)
                self.echo.flush()
            except (OSError, ValueError):
                self.echo = None

    def _write_all(self, data: bytes) -> None:
        """Straight to the file (no buffer left to fail again when it is closed)."""
        fd, view = self.log.fileno(), memoryview(data)
        while view:
            done = os.write(fd, view)
            self.written += done
            view = view[done:]

    def join(self, timeout_s: float) -> bool:
        """Whether the output reached its end (every writer of the pipe gone) in time."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def note(self) -> str | None:
        """What the log should say of its own bytes, if anything went missing."""
        if self.error is not None:
            return f"{self.error}; {self.dropped} byte(s) of output lost"
        if self.dropped:
            return f"output past {self.cap} bytes not kept: {self.dropped} byte(s)"
        return None
