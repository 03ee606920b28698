"""The code under test (the suite's setup and command) runs apart from the node runner, which
alone holds the job's secrets: the AWS credentials, the clone token and the manifest key.

- As root (the Batch container, CI), the runner runs the code as another user: the image's
  (DISTKPI_RUN_AS_UID / DISTKPI_RUN_AS_GID), else a uid leased from a range no process uses
  (so that nodes sharing one machine never share a uid), in a sandbox directory that user
  owns. That user can read no file, environment or memory of root's. After the command,
  every process of that uid is killed, however it left the process group.
- Not root (a developer's machine), it cannot change user: it re-executes itself with its
  secrets on an inherited pipe instead of in its environment, and makes itself non-dumpable
  (prctl(PR_SET_DUMPABLE, 0)), so that a process of the same user cannot read its
  /proc/<pid>/environ or mem. It is a child subreaper, so every process the command leaves
  behind is its descendant, and killed after the command.

Either way the code's environment is built from the documented variables only
(``code_environment``)."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

from distkpi.domain.planning import jobenv
from distkpi_cli.node.source import TOKEN_VARIABLE

KEY_VARIABLE = jobenv.MANIFEST_KEY  # this config's signing key (domain/signing.py)
# what only the runner holds: the clone token, the signing key, the job's AWS credentials
SECRET_VARIABLES = frozenset(
    {
        TOKEN_VARIABLE,
        KEY_VARIABLE,
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    }
)
# the runner's own settings, of no use to the code
RUNNER_VARIABLES = frozenset(
    {jobenv.RUN_AS_UID, jobenv.RUN_AS_GID, jobenv.WORKDIR, jobenv.SECRETS_FD}
)
# what the code gets of the node's own environment, besides the launcher's DISTKPI_* and the
# frameworks' variables (domain/nodeplace.py): the system's, the GPU stack's, Python's
PASSED_VARIABLES = frozenset(
    {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "PYTHONUNBUFFERED"}
    | {"PYTHONPATH", "PYTHONHASHSEED", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"}
)
PASSED_PREFIXES = ("DISTKPI_", "LC_", "CUDA_", "NVIDIA_", "NCCL_", "FI_", "OMP_", "MKL_")
SECRETS_FD = jobenv.SECRETS_FD
LEASED_UIDS = range(60000, 61000)  # used by no account on Debian/Ubuntu: 60000-64999 is unused
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
MAX_SECRETS_BYTES = 60000  # under a pipe's buffer: the runner writes them before it execs


class IsolationError(Exception):
    """The code cannot be run apart from the runner; says why, in a line."""


def is_passed(name: str) -> bool:
    if name in SECRET_VARIABLES or name in RUNNER_VARIABLES or name.startswith("AWS_"):
        return False
    return name in PASSED_VARIABLES or name.startswith(PASSED_PREFIXES)


def code_environment(env: Mapping[str, str], sandbox: Sandbox) -> dict[str, str]:
    """The code's environment: the documented variables of ``env`` and its own home and
    temporary directory in the sandbox; never a secret."""
    passed = {k: v for k, v in env.items() if is_passed(k)}
    return passed | {
        "HOME": str(sandbox.home),
        "TMPDIR": str(sandbox.tmp),
        "USER": sandbox.user.name,
        "LOGNAME": sandbox.user.name,
    }


@dataclass
class CodeUser:
    """Whom the code runs as: another uid when the runner is root, else the runner's own."""

    uid: int
    gid: int
    separate: bool  # True: another uid than the runner's, which may be killed by uid
    lease: IO[bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"distkpi-code-{self.uid}" if self.separate else _own_name()

    def popen_kwargs(self) -> dict[str, Any]:
        """How subprocess starts a process of the code: as this user, in a session of its
        own (stopped as one group at a deadline)."""
        kwargs: dict[str, Any] = {"start_new_session": True, "close_fds": True}
        if self.separate:
            kwargs |= {"user": self.uid, "group": self.gid, "extra_groups": [], "umask": 0o022}
        return kwargs

    def release(self) -> None:
        if self.lease is not None:
            self.lease.close()
            self.lease = None


def _own_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def code_user(env: Mapping[str, str]) -> CodeUser:
    """The code's user. As root: DISTKPI_RUN_AS_UID (and _GID, default the same number), else
    a uid of LEASED_UIDS that this machine's other nodes do not hold, no account has and no
    process runs as. Root is refused as the code's user."""
    if os.geteuid() != 0:
        return CodeUser(os.getuid(), os.getgid(), separate=False)
    given = env.get(jobenv.RUN_AS_UID)
    if given:
        uid = _number(jobenv.RUN_AS_UID, given)
        gid = _number(jobenv.RUN_AS_GID, env.get(jobenv.RUN_AS_GID) or given)
        if uid == 0 or gid == 0:
            raise IsolationError("DISTKPI_RUN_AS_UID/GID must not be root's (0)")
        return CodeUser(uid, gid, separate=True)
    return _lease_uid()


def _number(name: str, value: str) -> int:
    if not value.isdigit():
        raise IsolationError(f"{name} is not a number: {value!r}")
    return int(value)


def _has_account(uid: int) -> bool:
    import pwd

    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _lease_dir() -> Path:
    """Root's own folder of lease files (a folder another user made is refused)."""
    folder = Path(tempfile.gettempdir(), "distkpi-uid-leases")
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise IsolationError(f"{folder} is not root's own folder; remove it")
    return folder


def _lease_uid() -> CodeUser:
    folder = _lease_dir()
    for uid in LEASED_UIDS:
        lease = open(folder / str(uid), "ab")  # noqa: SIM115 (held for the node's life)
        try:
            fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lease.close()
            continue
        if _has_account(uid) or processes_of(uid):  # someone's: never ours to kill
            lease.close()
            continue
        return CodeUser(uid, uid, separate=True, lease=lease)
    raise IsolationError(f"every uid of {LEASED_UIDS.start}-{LEASED_UIDS.stop - 1} is in use")


@dataclass(frozen=True)
class Sandbox:
    """The code's directory, which its user owns: the checkout, DISTKPI_LOG_DIR, its home and
    temporary files. The runner's own files (the captured log, GPU samples) stay outside."""

    root: Path
    user: CodeUser

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @classmethod
    def make(cls, user: CodeUser) -> Sandbox:
        """A fresh folder under the system's temporary directory, reachable by the user once
        handed over."""
        root = Path(tempfile.mkdtemp(prefix="distkpi-code-"))
        sandbox = cls(root, user)
        for folder in (sandbox.log_dir, sandbox.home, sandbox.tmp):
            folder.mkdir(mode=0o700)
        _check_reachable(root)
        return sandbox

    def hand_over(self) -> None:
        """Everything in it becomes the code's user's (after the runner's checkout)."""
        if not self.user.separate:
            return
        from distkpi_cli.node.walk import chown_tree  # however deep the checkout nests

        chown_tree(self.root, self.user.uid, self.user.gid)

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def _walk(root: Path) -> Iterator[Path]:
    yield root
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            yield Path(folder, name)


def _check_reachable(path: Path) -> None:
    for parent in path.parents:
        if not parent.stat().st_mode & stat.S_IXOTH:
            raise IsolationError(
                f"{parent} is not searchable by other users: the code's user cannot reach {path}"
            )


def processes_of(uid: int) -> list[int]:
    """Live processes (not zombies) whose real, effective or saved uid is ``uid``."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uids = {int(u) for u in fields.get("Uid", "").split()[:3]}
        if uid in uids and not fields.get("State", "").strip().startswith(("Z", "X")):
            pids.append(int(entry.name))
    return pids


def stop_processes_of(uid: int, attempts: int = 200) -> None:
    """Kill every process of ``uid`` (as root), repeated until none is left, even one that
    forks meanwhile: kill(-1, SIGKILL) from a process of that uid reaches all of them at
    once; those left (none, usually) are killed one by one."""
    for _ in range(attempts):
        pids = processes_of(uid)
        if not pids:
            return
        _kill_all_as(uid)
        for pid in processes_of(uid):
            _kill(pid)
        _reap(pids)
        time.sleep(0.02)
    raise IsolationError(f"processes of uid {uid} still running after {attempts} kills")


def _kill_all_as(uid: int) -> None:
    import subprocess

    from distkpi_cli.node.killall import KillAllError, kill_all_as

    try:  # without a fork, which a fork bomb under the uid's process cap would refuse
        kill_all_as(uid)
        return
    except KillAllError:
        pass

    subprocess.run(
        ["/bin/sh", "-c", "kill -9 -1"],
        user=uid,
        group=uid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        check=False,
        capture_output=True,
    )


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _reap(pids: Sequence[int]) -> None:
    """Collect those of them that were the runner's children (orphans re-parented to it)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def descendants_of(pid: int) -> list[int]:
    """Live processes below ``pid`` (the runner, a subreaper: orphans stay below it)."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat_line = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        state, ppid = stat_line.rsplit(")", 1)[1].split()[:2]
        if state not in ("Z", "X"):
            parents[int(entry.name)] = int(ppid)
    below: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return sorted(below)


def stop_descendants(attempts: int = 200) -> None:
    """Kill every process below this one, repeated until none is left."""
    me = os.getpid()
    for _ in range(attempts):
        pids = descendants_of(me)
        if not pids:
            return
        for pid in pids:
            _kill(pid)
        _reap(pids)
        time.sleep(0.02)
    raise IsolationError(f"processes below {me} still running after {attempts} kills")


def stop_code(user: CodeUser) -> None:
    """Nothing of the code is left running: every process of its uid, or (same user) every
    process below the runner."""
    if user.separate:
        stop_processes_of(user.uid)
    else:
        stop_descendants()


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise IsolationError(f"prctl({option}, {value}) failed: errno {ctypes.get_errno()}")


def guard_runner(command: Sequence[str]) -> None:
    """Called first by `distkpi node`. As root: nothing to do (the code runs as another
    user). Otherwise: with secrets in the environment, re-execute without them (never
    returns); after that re-execution, become non-dumpable and a child subreaper, then take
    the secrets back from the pipe into this process's environment."""
    if os.geteuid() == 0:
        return
    if SECRETS_FD not in os.environ:
        _reexec_without_secrets(command)
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    fd = int(os.environ.pop(SECRETS_FD))
    with os.fdopen(fd, "rb") as pipe:
        secrets = json.loads(pipe.read() or b"{}")
    os.environ.update(secrets)


def _reexec_without_secrets(command: Sequence[str]) -> NoReturn:
    secrets = {k: v for k, v in os.environ.items() if k in SECRET_VARIABLES}
    data = json.dumps(secrets).encode()
    if len(data) > MAX_SECRETS_BYTES:
        raise IsolationError(f"the secrets take {len(data)} bytes; at most {MAX_SECRETS_BYTES}")
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    os.set_inheritable(read, True)
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARIABLES}
    env[SECRETS_FD] = str(read)
    args = [sys.executable, "-m", "distkpi_cli.main", "node"]
    if command:
        args += ["--", *command]
    os.execve(sys.executable, args, env)
