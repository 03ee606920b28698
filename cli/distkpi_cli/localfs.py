"""A run folder on local disk, as a RunSource."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO

from distkpi.exceptions import NotFoundError, RunFolderError, StorageError
from distkpi_cli.confined import UnsafeNameError, confined

MISSING = (FileNotFoundError, IsADirectoryError, NotADirectoryError)


class LocalRunSource:
    def __init__(self, root: Path) -> None:
        if not root.exists():
            raise RunFolderError(f"{root} does not exist")
        if not root.is_dir():
            raise RunFolderError(f"{root} is not a folder")
        self.root = root.resolve()

    def _path(self, relative: str) -> Path:
        bare = relative.strip("/")
        try:
            path = (confined(self.root, bare) if bare else self.root).resolve()
        except UnsafeNameError as exc:
            raise StorageError(f"{relative!r} cannot be read: {exc}") from exc
        except (OSError, ValueError) as exc:
            raise StorageError(f"{relative!r} cannot be read: {exc}") from exc
        if not path.is_relative_to(self.root):
            raise NotFoundError(f"{relative} leaves the run folder")
        return path

    def read_bytes(self, path: str) -> bytes:
        with self.open(path) as stream:
            return stream.read()

    def open(self, path: str) -> AbstractContextManager[BinaryIO]:
        """NotFoundError when absent; StorageError when the name or the file is unusable
        (a NUL byte, a name too long, no permission)."""
        try:
            return self._path(path).open("rb")
        except MISSING as exc:
            raise NotFoundError(path) from exc
        except (OSError, ValueError) as exc:
            raise StorageError(f"{path!r} cannot be read: {exc}") from exc

    def list_names(self, folder: str) -> list[str]:
        directory = self._path(folder)
        if not directory.is_dir():
            return []
        return sorted(p.name for p in directory.iterdir() if p.is_file())
