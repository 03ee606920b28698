"""Folders the code under test wrote, walked without trusting them: depth first and
iteratively (no recursion limit to reach however deep they nest), holding one directory
descriptor at a time (no descriptor limit either), each folder opened with O_NOFOLLOW |
O_DIRECTORY relative to its parent's (a link is never followed, not even one that
replaced a folder), names kept as the bytes they are, within a depth and an entry cap."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 32  # folders below the top, at most, for what is uploaded
MAX_ENTRIES = 100_000  # names looked at, at most, for what is uploaded
UNBOUNDED = 1 << 62
SHOWN_CHARS = 200  # of a path in a message
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFolderError(Exception):
    """A folder that is not one (a link, a file, gone): never walked."""


def open_folder(path: Path | str, parent_fd: int | None = None) -> int:
    """A descriptor of ``path``, absolute, or relative to ``parent_fd``; each part opened
    with O_NOFOLLOW | O_DIRECTORY, so no link on the way is followed."""
    path = Path(path)
    if parent_fd is None:
        path = path.absolute()
    parts = path.parts[1:] if parent_fd is None else path.parts
    try:
        fd = os.open("/" if parent_fd is None else ".", DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise UnsafeFolderError(f"{path}: {exc.strerror}") from exc
    try:
        for part in parts:
            following = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = following
    except OSError as exc:
        os.close(fd)
        raise UnsafeFolderError(f"{path}: {exc.strerror}") from exc
    return fd


@dataclass(frozen=True)
class Entry:
    """A name met in a walk, with its parent folder's descriptor (valid until the walk goes
    on) and its lstat."""

    dir_fd: int
    parts: tuple[bytes, ...]  # from the top
    info: os.stat_result
    left: bool = False  # True: a folder whose contents have all been met (met again, last)

    @property
    def name(self) -> bytes:
        return self.parts[-1]

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)


@dataclass
class Walk:
    """Every name below ``top_fd``, depth first; what was not walked (too deep, too many,
    unreadable) in ``skipped``, escaped."""

    top_fd: int
    max_depth: int = MAX_DEPTH
    max_entries: int = MAX_ENTRIES
    skipped: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[Entry]:
        fd = os.open(".", DIR_FLAGS, dir_fd=self.top_fd)
        levels: list[tuple[list[bytes], tuple[bytes, ...], os.stat_result | None]] = [
            (self._names(fd, ()), (), None)
        ]
        seen = 0
        try:
            while levels:
                names, parts, info = levels[-1]
                if not names:
                    levels.pop()
                    if not levels:
                        return
                    parent = os.open("..", DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = parent
                    assert info is not None
                    yield Entry(fd, parts, info, left=True)
                    continue
                name = names.pop()
                seen += 1
                if seen > self.max_entries:
                    self.skipped.append(f"more than {self.max_entries} names: the rest")
                    return
                try:
                    found = Entry(fd, (*parts, name), os.lstat(name, dir_fd=fd))
                except OSError:
                    continue
                yield found
                if found.is_dir and (child := self._enter(found)) is not None:
                    os.close(fd)
                    fd = child
                    levels.append((self._names(fd, found.parts), found.parts, found.info))
        finally:
            os.close(fd)

    def _enter(self, found: Entry) -> int | None:
        if len(found.parts) > self.max_depth:
            self.skipped.append(f"{shown(found.parts)}: deeper than {self.max_depth} folders")
            return None
        try:
            child = os.open(found.name, DIR_FLAGS, dir_fd=found.dir_fd)
        except OSError as exc:
            self.skipped.append(f"{shown(found.parts)}: {exc.strerror}")
            return None
        now = os.fstat(child)
        if (now.st_dev, now.st_ino) != (found.info.st_dev, found.info.st_ino):
            os.close(child)  # replaced since it was looked at
            self.skipped.append(f"{shown(found.parts)}: replaced while walked")
            return None
        return child

    def _names(self, fd: int, parts: tuple[bytes, ...]) -> list[bytes]:
        try:
            return sorted((os.fsencode(n) for n in os.listdir(fd)), reverse=True)
        except OSError as exc:
            self.skipped.append(f"{shown(parts)}: {exc.strerror}")
            return []


def shown(parts: tuple[bytes, ...]) -> str:
    """A path of raw names as a line shows it: anything but printable ASCII escaped."""
    text = ascii(b"/".join(parts).decode(errors="surrogateescape"))[1:-1]
    text = text.replace("\\udc", "\\x") or "."
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}..."


def open_file(top_fd: int, parts: tuple[bytes, ...], flags: int) -> int:
    """``parts`` below ``top_fd`` opened with ``flags`` | O_NOFOLLOW, no link on the way
    followed."""
    folder = open_folder(Path(*map(os.fsdecode, parts[:-1])), top_fd) if parts[:-1] else None
    try:
        return os.open(
            parts[-1], flags | os.O_NOFOLLOW, dir_fd=top_fd if folder is None else folder
        )
    finally:
        if folder is not None:
            os.close(folder)


def chown_tree(top: Path, uid: int, gid: int) -> None:
    """``top`` and all below it owned by ``uid``:``gid``, links themselves, never through
    one, however deep."""
    fd = open_folder(top)
    try:
        os.chown(fd, uid, gid)
        for entry in Walk(fd, max_depth=UNBOUNDED, max_entries=UNBOUNDED):
            if not entry.left:
                os.chown(entry.name, uid, gid, dir_fd=entry.dir_fd, follow_symlinks=False)
    finally:
        os.close(fd)


def remove_tree(top: Path) -> None:
    """``top`` and all below it gone, however deep it nests (shutil.rmtree recurses),
    never through a link; what cannot be removed is left."""
    try:
        fd = open_folder(top)
    except UnsafeFolderError:
        with contextlib.suppress(OSError):
            top.unlink()
        return
    try:
        for entry in Walk(fd, max_depth=UNBOUNDED, max_entries=UNBOUNDED):
            with contextlib.suppress(OSError):
                if entry.left:
                    os.rmdir(entry.name, dir_fd=entry.dir_fd)
                elif not entry.is_dir:
                    os.unlink(entry.name, dir_fd=entry.dir_fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        top.rmdir()


def remove_owned_by(uid: int, folders: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")) -> None:
    """What ``uid`` left at the top of the machine's shared temporary folders, removed, so
    that the next node leasing that uid finds none of it."""
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid == uid:
                    remove_tree(Path(entry.path))
