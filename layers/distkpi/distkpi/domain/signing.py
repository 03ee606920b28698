"""Signed records and file digests: a job can read and write any object under `runs/`, so
what a node writes carries an HMAC-SHA256 under its config's own key (derived from the
stack's master secret, given to that config's job only), and its manifest the sha256 of
every file it names. A manifest forged by another job, or a file changed after its node
wrote its manifest, is then found out, and its numbers are never used."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

SIGNATURE = "signature"


def config_key(master: str, run_id: str, config: str) -> str:
    """A config's key: HMAC-SHA256 of the master secret over the run id and config name
    (NUL apart, which neither can hold), so it is stored nowhere and made again when needed."""
    message = f"{run_id}\0{config}".encode()
    return hmac.new(master.encode(), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class ManifestKeys:
    """Each config's key, from the master secret (read when first needed)."""

    master: Callable[[], str]

    def for_config(self, run_id: str, config: str) -> str:
        return config_key(self.master(), run_id, config)


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


class HashingReader:
    """A stream that hashes what is read through it, so a parser's one pass also yields
    the file's sha256 (``finish`` reads whatever the parser left)."""

    def __init__(self, stream: BinaryIO) -> None:
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
