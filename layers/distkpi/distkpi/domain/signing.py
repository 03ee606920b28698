"""Signed records and file digests: a job can read and write any object under `runs/`, so
what a node writes carries an HMAC-SHA256 under its config's own key (made by the launcher,
given to that config's job only), and its manifest the sha256 of every file it names. A
manifest forged by another job, or a file changed after its node wrote its manifest, is
then found out, and its numbers are never used."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any, Protocol

SIGNATURE = "signature"


def new_key() -> str:
    return secrets.token_hex(32)


def _canonical(record: Mapping[str, Any]) -> bytes:
    unsigned = {k: v for k, v in record.items() if k != SIGNATURE}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()


def sign(key: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """The record with its signature, over everything else in it."""
    digest = hmac.new(key.encode(), _canonical(record), hashlib.sha256).hexdigest()
    return {**record, SIGNATURE: digest}


def signed_by(key: str, record: Mapping[str, Any]) -> bool:
    given = record.get(SIGNATURE)
    if not isinstance(given, str):
        return False
    expected = hmac.new(key.encode(), _canonical(record), hashlib.sha256).hexdigest()
    return hmac.compare_digest(given.encode(), expected.encode())


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class HashingReader:
    """A stream that hashes what is read through it, so a parser's one pass also yields
    the file's sha256 (``finish`` reads whatever the parser left)."""

    def __init__(self, stream: _Readable) -> None:
        self.stream = stream
        self.hash = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        block = self.stream.read(size)
        self.hash.update(block)
        return block

    def finish(self) -> str:
        while block := self.read(1 << 20):
            del block
        return self.hash.hexdigest()
