"""What the command left in DISTKPI_LOG_DIR that is uploaded, chosen as the collector's
contract would choose it, by the node itself: regular files of the code's own (never a
link, a fifo, a device, another user's file), under names the manifest takes (UTF-8, no
backslash or control character, within MAX_PATH_BYTES), not environment dumps, and no more
than the manifest has room for. Everything else is listed, escaped, for the node's log.

The folder is reached from a descriptor of the sandbox opened before the code ran, each
part with O_NOFOLLOW (node/walk.py): a DISTKPI_LOG_DIR the code replaced by a link to
another folder is not read."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from distkpi.domain.contracts import FileEntry
from distkpi.domain.diagnosis.trace import MAX_TRACE_BYTES
from distkpi.domain.planning.jobenv import PROFILE_FOLDER
from distkpi_cli.node.walk import UnsafeFolderError, Walk, open_file, open_folder, shown

# Paddle's launcher writes the whole environment into its --log_dir: envlog.<rank>,
# backup_env.<rank>.json, and an environ({...}) line at the top of its own log
ENVIRONMENT_DUMP_NAMES = (b"envlog.", b"backup_env.")
ENVIRONMENT_DUMP_LINE = b"environ({"
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
# a kept file is for people to look at: a sparse terabyte would cost no disk, and days
MAX_KEPT_FILE_BYTES = 1 << 30
# a diagnosis job's trace (DISTKPI_PROFILE_DIR): no larger than the collector reduces
TRACES = f"{PROFILE_FOLDER}/"


class UnsafeFile(Exception):
    """A file the code left that is not a regular file of its own (a link, a device, a
    fifo, another user's file): never read, never uploaded."""


def regular(fd: int, owner: int | None) -> BinaryIO:
    """``fd`` as a binary file when it is a regular file (``owner``'s when given); closed
    and UnsafeFile otherwise."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (owner is not None and info.st_uid != owner):
        os.close(fd)
        raise UnsafeFile("not a regular file of the code's user")
    return os.fdopen(fd, "rb")


def open_regular(path: Path, owner: int | None = None) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (not a link, whatever it points
    to), and ``owner``'s when given; UnsafeFile otherwise."""
    try:
        fd = os.open(path, READ_FLAGS | os.O_NOFOLLOW)
    except OSError as exc:
        raise UnsafeFile(f"{exc.strerror}") from exc
    return regular(fd, owner)


@dataclass(frozen=True)
class LogDir:
    """DISTKPI_LOG_DIR of one run, and how to reach it without following a link:
    ``relative`` to the descriptor ``base_fd`` opened before the code ran, else by its
    absolute path."""

    path: Path
    base_fd: int | None = None
    relative: Path | None = None

    def open(self) -> int:
        if self.base_fd is not None and self.relative is not None:
            return open_folder(self.relative, self.base_fd)
        return open_folder(self.path)


@dataclass(frozen=True)
class KeptFile:
    folder: LogDir
    parts: tuple[bytes, ...]
    relative: str  # the parts as text, as the manifest names them below files/<stem>/
    owner: int | None

    def open(self) -> BinaryIO:
        try:
            top = self.folder.open()
        except UnsafeFolderError as exc:
            raise UnsafeFile(str(exc)) from exc
        try:
            return regular(open_file(top, self.parts, READ_FLAGS), self.owner)
        except (OSError, UnsafeFolderError) as exc:
            raise UnsafeFile(str(exc)) from exc
        finally:
            os.close(top)


@dataclass
class LeftFiles:
    kept: list[KeptFile] = field(default_factory=list)
    dumps: list[str] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # names the manifest does not take,
    # and files over MAX_KEPT_FILE_BYTES
    over: list[str] = field(default_factory=list)  # past the manifest's room
    skipped: list[str] = field(default_factory=list)  # not walked
    unreadable: str | None = None  # the folder itself

    def lines(self, shown_as: Callable[[str], str]) -> list[str]:
        """What the node's log says of them."""
        said = []
        if self.unreadable:
            said.append(f"DISTKPI_LOG_DIR not read: {self.unreadable}")
        for label, names in (
            ("environment dumps", self.dumps),
            ("not regular files of the code's", self.unsafe),
            ("names the manifest does not take, or too large", self.refused),
            ("over the manifest's room for files", self.over),
        ):
            if names:
                said.append(f"not uploaded, {label}: {', '.join(map(shown_as, names))}")
        if self.skipped:
            said.append(f"not looked at: {'; '.join(self.skipped)}")
        return said


def find_left(
    folder: LogDir,
    owner: int | None,
    check_path: Callable[[str], str | None],
    room: int,
) -> LeftFiles:
    """What the command left under ``folder``: at most ``room`` kept files, the rest
    listed. ``check_path``: why the manifest would refuse a relative name, if it would."""
    found = LeftFiles()
    try:
        top = folder.open()
    except UnsafeFolderError as exc:
        found.unreadable = str(exc)
        return found
    try:
        walk = Walk(top)
        for entry in walk:
            if entry.left or entry.is_dir:
                continue
            name = shown(entry.parts)
            if not stat.S_ISREG(entry.info.st_mode) or (
                owner is not None and entry.info.st_uid != owner
            ):
                found.unsafe.append(name)
                continue
            try:
                relative = b"/".join(entry.parts).decode()
            except UnicodeDecodeError:
                found.refused.append(f"{name} (not UTF-8)")
                continue
            if (why := check_path(relative)) is not None:
                found.refused.append(f"{name} ({why})")
                continue
            limit = MAX_TRACE_BYTES if relative.startswith(TRACES) else MAX_KEPT_FILE_BYTES
            if entry.info.st_size > limit:
                found.refused.append(f"{name} (over {limit} bytes)")
                continue
            kept = KeptFile(folder, entry.parts, relative, owner)
            if _is_environment_dump(kept):
                found.dumps.append(name)
            elif len(found.kept) >= room:
                found.over.append(name)
            else:
                found.kept.append(kept)
        found.skipped = walk.skipped
    finally:
        os.close(top)
    return found


def _is_environment_dump(kept: KeptFile) -> bool:
    if kept.parts[-1].startswith(ENVIRONMENT_DUMP_NAMES):
        return True
    try:
        with kept.open() as f:
            return f.readline(4096).lstrip().startswith(ENVIRONMENT_DUMP_LINE)
    except (UnsafeFile, OSError):  # the upload says so, as for any such file
        return False


def manifest_refuses(path: str) -> str | None:
    """Why the manifest's file entry would refuse ``path``, if it would."""
    try:
        FileEntry.model_validate({"path": path, "role": "trainer", "rank": 0, "kind": "file"})
    except ValidationError as exc:
        return "; ".join(str(e["msg"]) for e in exc.errors())
    return None
