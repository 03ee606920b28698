"""kill(-1, SIGKILL) as the code's uid, from root, without a fork: a thread of the runner
takes that uid for itself alone (the raw setresuid system call changes the calling thread's
credentials only; glibc's wrapper would change every thread's), sends the signal, which
reaches every process of that uid at once (however fast they fork, and when the uid's
process cap leaves no room for another process), and takes root back."""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import threading

# setresuid's number, by architecture (asm/unistd.h)
SETRESUID = {"x86_64": 117, "aarch64": 147}


class KillAllError(Exception):
    """kill(-1) could not be sent as that uid."""


def kill_all_as(uid: int) -> None:
    """SIGKILL to every process of ``uid`` but the caller; KillAllError when this
    machine's architecture or privileges do not allow it without a fork."""
    number = SETRESUID.get(platform.machine())
    if number is None or os.geteuid() != 0 or uid == 0:
        raise KillAllError(f"no thread-only setresuid on {platform.machine()} or not root")
    libc = ctypes.CDLL(None, use_errno=True)
    failure: list[str] = []

    def as_uid() -> None:
        # real and effective uid the code's (kill(2) compares the sender's real or effective
        # uid with the target's), the saved uid root's, to come back
        if libc.syscall(number, uid, uid, 0) != 0:
            failure.append(f"setresuid: errno {ctypes.get_errno()}")
            return
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass  # none left
        except OSError as exc:
            failure.append(f"kill: {exc.strerror}")
        finally:
            if libc.syscall(number, 0, 0, 0) != 0:  # never reached: the saved uid is 0
                os._exit(70)

    thread = threading.Thread(target=as_uid)
    thread.start()
    thread.join()
    if failure:
        raise KillAllError("; ".join(failure))
