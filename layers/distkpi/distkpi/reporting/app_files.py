"""The site's application (reporting/app/: plain HTML, CSS and scripts over api/), as the
files copied into the site's root, and a digest of them that says when a copy is stale."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

APP = Path(__file__).resolve().parent / "app"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}


@dataclass(frozen=True)
class AppFiles:
    files: dict[str, bytes]  # path under the site's root -> bytes
    digest: str  # sha256 over the paths and their bytes

    @staticmethod
    def content_type(name: str) -> str:
        return TYPES.get(Path(name).suffix.lower(), "application/octet-stream")


def read_app(folder: Path = APP) -> AppFiles:
    """Every regular file under ``folder`` (none when it is absent)."""
    files: dict[str, bytes] = {}
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                files[path.relative_to(folder).as_posix()] = path.read_bytes()
    digest = hashlib.sha256()
    for name, data in files.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return AppFiles(files, digest.hexdigest())


@cache
def app_files() -> AppFiles:
    """The deployed application: read once per process."""
    return read_app()
