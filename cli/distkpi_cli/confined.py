"""A name that came from a run folder (an S3 key, a file name the code under test chose)
joined onto a local folder, never leaving it: every local path built from such a name is
built here."""

from __future__ import annotations

from pathlib import Path


class UnsafeNameError(ValueError):
    """A name that would leave its folder, or that no local file can safely carry."""


def confined(folder: Path, relative: str) -> Path:
    """``folder`` / ``relative``, where ``relative`` is a plain relative path: no leading
    slash, no empty, ``.`` or ``..`` part, no backslash, NUL or other control character.
    UnsafeNameError otherwise; the folder itself is never returned."""
    if not relative or relative.startswith("/"):
        raise UnsafeNameError(f"{relative!r} is not a relative path")
    if any(ord(c) < 0x20 or c in "\\\x7f" for c in relative):
        raise UnsafeNameError(f"{relative!r} holds a backslash or a control character")
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafeNameError(f"{relative!r} has an empty, '.' or '..' part")
    return folder.joinpath(*parts)
