"""This Python environment as the code under test's user can run it.

As root, `distkpi node` runs the code as another user (node/isolation.py), with this
environment's `python` first on its PATH. When the environment lives where other users
cannot enter (a clone under root's home, or in a `mktemp -d` folder: both mode 700), that
user could run none of it: no interpreter, no torch, no console script such as torchrun.
It then gets a readable twin, a virtual environment under the system's temporary folder:

- its `python` is an interpreter of the same version that every user can run (this one's
  base, else the system's);
- its site-packages are hard links to this environment's files (the same files, root's and
  read-only to that user; copied where the file systems differ), less the editable
  install's hooks, which point back into the clone;
- its console scripts are this environment's, started by its own `python`.

A twin is made once per state of the environment (the names, inodes and times of its
packages and scripts), under a lock, and reused; the twin of an earlier state is removed
when the next is made. Nothing of the clone's own folders changes mode.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import stat
import sys
import sysconfig
import tempfile
from pathlib import Path

COMPLETE = ".distkpi-complete"
SYSTEM_BIN = "/usr/local/bin:/usr/bin:/bin"


class CodeEnvError(Exception):
    """The twin cannot be made; says why, in a line."""


def reachable_by_others(path: str | Path) -> bool:
    """Whether another user can enter every folder down to ``path`` (and run it)."""
    real = Path(os.path.realpath(path))
    try:
        return all(p.stat().st_mode & stat.S_IXOTH for p in [real, *real.parents])
    except OSError:
        return False


@functools.cache
def code_bin() -> str:
    """The folder to put first on the code's PATH: this environment's own `bin` when the
    code's user can run it (or is this user), else its readable twin's (made when needed).
    Its own, too, when no twin can be made: `distkpi node` then says what is out of reach."""
    own = os.path.dirname(sys.executable)
    if os.geteuid() != 0 or reachable_by_others(sys.executable):
        return own
    try:
        return str(twin_of(Path(sys.prefix)) / "bin")
    except CodeEnvError:
        return own


def shared_folder() -> Path:
    """Root's folder under the system's temporary folder that every user can enter, for
    what the code's users read: environments' twins, and caches (`cache/`)."""
    folder = Path(tempfile.gettempdir(), "distkpi-for-code")
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o755)
    info = folder.lstat()
    mine = info.st_uid == os.geteuid() and not info.st_mode & 0o022
    if not stat.S_ISDIR(info.st_mode) or not mine:
        raise CodeEnvError(f"{folder} is not this user's own folder closed to writes; remove it")
    folder.chmod(0o755)
    return folder


def reachable_cache(preferred: Path) -> Path:
    """``preferred`` when the code's user can reach it, else `cache/` of shared_folder()."""
    existing = next(p for p in (preferred, *preferred.parents) if p.exists())
    if os.geteuid() != 0 or reachable_by_others(existing):
        return preferred
    folder = shared_folder() / "cache"
    folder.mkdir(mode=0o755, exist_ok=True)
    return folder


def _interpreter() -> Path:
    """An interpreter of this version that every user can run."""
    base = Path(getattr(sys, "_base_executable", "") or sys.executable)
    if reachable_by_others(base):
        return base
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path=SYSTEM_BIN)
    if system is None or not reachable_by_others(system):
        raise CodeEnvError(f"no {version} that other users can run ({base} is out of reach)")
    return Path(system)


def _state(venv: Path, site: Path) -> str:
    digest = hashlib.sha256(str(venv).encode())
    for folder in (site, venv / "bin"):
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            info = entry.stat(follow_symlinks=False)
            digest.update(f"{entry.name}\0{info.st_ino}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def twin_of(venv: Path) -> Path:
    """The readable twin of the virtual environment ``venv`` (this process's), made if
    there is none for its current state."""
    if sys.prefix == sys.base_prefix:
        raise CodeEnvError(f"{sys.executable} is no virtual environment's")
    site = Path(sysconfig.get_paths()["purelib"])
    interpreter = _interpreter()
    shared = shared_folder()
    family = hashlib.sha256(str(venv).encode()).hexdigest()[:8]
    twin = shared / f"python-{family}-{_state(venv, site)}"
    if (twin / COMPLETE).exists():
        return twin
    with open(shared / f"python-{family}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (twin / COMPLETE).exists():
            return twin
        making = twin.with_name(twin.name + ".making")
        shutil.rmtree(making, ignore_errors=True)
        _make(venv, site, interpreter, making, twin / "bin" / "python")
        shutil.rmtree(twin, ignore_errors=True)
        making.rename(twin)
        for old in shared.glob(f"python-{family}-*"):
            if old != twin:
                shutil.rmtree(old, ignore_errors=True)
    return twin


def _make(venv: Path, site: Path, interpreter: Path, twin: Path, python: Path) -> None:
    """The twin in ``twin``, to be renamed to where ``python`` is its interpreter."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    bin_ = twin / "bin"
    bin_.mkdir(parents=True, mode=0o755)
    (twin / "pyvenv.cfg").write_text(
        f"home = {interpreter.parent}\ninclude-system-site-packages = false\n"
        f"version = {'.'.join(map(str, sys.version_info[:3]))}\n"
    )
    for name in ("python", "python3", version):
        (bin_ / name).symlink_to(interpreter)
    _link_tree(site, twin / "lib" / version / "site-packages")
    _scripts(venv / "bin", bin_, python)
    for folder, _, _ in os.walk(twin):  # the linked files keep their own modes
        os.chmod(folder, 0o755)
    (twin / COMPLETE).write_text(f"{venv}\n")


def _link_tree(source: Path, target: Path) -> None:
    for folder, dirs, files in os.walk(source):
        here = target / Path(folder).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in [d for d in dirs if Path(folder, d).is_symlink()] + files:
            if name.startswith("__editable__"):  # hooks into the clone itself
                continue
            src, dst = Path(folder, name), here / name
            if src.is_symlink():
                dst.symlink_to(os.readlink(src))
                continue
            try:
                os.link(src, dst)
            except OSError:  # another file system (or links refused): a copy
                shutil.copy2(src, dst)


def _scripts(source: Path, target: Path, python: Path) -> None:
    """This environment's console scripts (a `#!` line naming its own python), each
    started by the twin's python instead."""
    own = str(source)
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if not entry.is_file(follow_symlinks=False) or (target / entry.name).exists():
            continue
        with open(entry.path, "rb") as f:
            first = f.readline()
            if not first.startswith(f"#!{own}/python".encode()):
                continue
            rest = f.read()
        script = target / entry.name
        script.write_bytes(f"#!{python}\n".encode() + rest)
        script.chmod(0o755)
