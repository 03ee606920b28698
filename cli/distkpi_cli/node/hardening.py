"""prctl(2) switches for the runner and the code under test."""

from __future__ import annotations

import ctypes
import resource
import shutil
import signal
import subprocess
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distkpi_cli.node.isolation import CodeUser

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PID_NAMESPACE = ["unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child"]
# processes and threads of the code's uid at most (RLIMIT_NPROC counts both); training
# processes run a thread per core and data loader workers, far below it
MAX_CODE_TASKS = 16384


def prctl(option: int, value: int) -> bool:
    """Whether the kernel took it."""
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(option, value, 0, 0, 0) == 0)


def not_dumpable() -> bool:
    """No process of the same user may read this one's /proc/<pid>/environ or memory."""
    return prctl(PR_SET_DUMPABLE, 0)


def no_new_privileges() -> bool:
    """Neither this process nor what it executes may gain privileges (setuid binaries,
    file capabilities)."""
    return prctl(PR_SET_NO_NEW_PRIVS, 1)


def code_spawn(user: CodeUser, max_tasks: int = MAX_CODE_TASKS) -> dict[str, Any]:
    """How a process of the code starts (``user.popen_kwargs()``), and, in it before it
    executes: no new privileges (a setuid binary runs with its caller's), and, when the code
    has a uid of its own, at most ``max_tasks`` processes and threads of that uid, so that
    a fork bomb ends at that cap rather than at the machine's; it is killed if the runner
    dies."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child only calls it
    cap = max_tasks if user.separate else None

    def in_child() -> None:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        # killed with the runner, however it ends (its pid namespace with it, when it has one)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))

    return user.popen_kwargs() | {"preexec_fn": in_child}


def own_pid_namespace(user: CodeUser) -> tuple[list[str], str | None]:
    """Not root (the code runs as the runner's own user): the prefix that runs a command in
    a user and pid namespace of its own, whose processes cannot see, signal or outlive the
    runner (the namespace ends with its first process, which ends with the runner); and,
    when this machine refuses one, no prefix and why. As root: none needed."""
    if user.separate:
        return [], None
    if shutil.which(PID_NAMESPACE[0]) is None:
        return [], "no unshare(1) on this machine"
    tried = subprocess.run(
        [*PID_NAMESPACE, "--", "true"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
        check=False,
    )
    if tried.returncode != 0:
        return [], f"unshare: {tried.stderr.decode(errors='replace').strip()[:200]}"
    return [*PID_NAMESPACE, "--"], None
