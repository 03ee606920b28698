"""Signed records and file digests: a job can read and write any object under `runs/`, so
what a node writes carries an HMAC-SHA256 under its config's own key (derived from the
stack's master secret, given to that config's job only), and its manifest the sha256 of
every file it names. A manifest forged by another job, or a file changed after its node
wrote its manifest, is then found out, and its numbers are never used."""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

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


class Unsealed(ValueError):
    """A record that is no JSON object, not signed with the config's key, or signed for
    another run, config, node or pair than the one it was read for."""


class BoundElsewhere(Unsealed):
    """A signed record copied from another place: ``found`` is what it says it is for."""

    def __init__(self, found: Mapping[str, object]) -> None:
        super().__init__(f"signed for {dict(found)}")
        self.found = dict(found)


def seal(key: str | None, record: Mapping[str, Any]) -> dict[str, Any]:
    """A record bound to where it belongs (its run, config and node or pair, inside it),
    signed with the config's key; as it is with no key (a local stack that signs nothing)."""
    return sign(key, record) if key else dict(record)


def unseal(key: str | None, data: object, **bound: object) -> dict[str, Any]:
    """``data`` as a record, once it is a JSON object, signed with ``key`` (when there is
    one) and bound to ``bound`` (run_id=, config=, node= or pair=): Unsealed (BoundElsewhere
    for a record copied from another place) when it is not. The one check
    of every signed, bound record: rendezvous records, the collector's decisions, node and
    look manifests."""
    if not isinstance(data, dict):
        raise Unsealed("not a JSON object")
    if key and not signed_by(key, data):
        raise Unsealed("not signed with this config's key")
    found = {name: data.get(name) for name in bound}
    if found != bound:
        raise BoundElsewhere(found)
    return data


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class HashingReader:
    """A stream read ahead by a thread of its own, and each block it reads hashed by another,
    so a parser's one pass also yields the file's sha256 without paying for it: the reading,
    the hashing (both release the GIL on large buffers) and the parse of the same blocks run
    side by side instead of in series (on a page-cached file the sha256 is the longest of the
    three, so it gets a thread alone). A stream shorter than a block is read and hashed at
    once, without threads. At most ``AHEAD`` blocks wait for each, so memory stays bounded.
    Use it as a context manager: leaving it stops the threads, whatever the parser did;
    ``finish`` reads whatever the parser left and gives the digest. An error reading the
    stream is raised to the reader."""

    BLOCK_BYTES = 4 * 1024 * 1024
    AHEAD = 2

    def __init__(self, stream: _Readable) -> None:
        self._stream = stream
        self._blocks: queue.Queue[bytes | BaseException | None] = queue.Queue(self.AHEAD)
        self._stop = threading.Event()
        self._left = b""  # what the last block holds beyond the size a read asked for
        self._ended = False
        self._digest: str | None = None
        self.bytes_read = 0  # by the reader and finish()
        self.unread_bytes = 0  # of them, those finish() read: the reader stopped short
        self._hash = hashlib.sha256()
        self._hashing: queue.Queue[bytes | bool | None] = queue.Queue(self.AHEAD)
        self._threads: tuple[threading.Thread, ...] = ()
        if not self._read_head():
            self._threads = (
                threading.Thread(target=self._read_ahead, daemon=True),
                threading.Thread(target=self._hash_blocks, daemon=True),
            )
            for thread in self._threads:
                thread.start()

    def __enter__(self) -> HashingReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _read_head(self) -> bool:
        """The stream's first block, read here; whether that was all of it. Most files of a
        run folder are shorter than a block: a thread would cost them more than it saves."""
        try:
            block = self._stream.read(self.BLOCK_BYTES)
            after = b"" if not block or len(block) == self.BLOCK_BYTES else self._stream.read(1)
            for part in (block, after):
                if part:
                    self._hash.update(part)
                    self._blocks.put(part)
            if len(block) == self.BLOCK_BYTES or after:
                return False  # the thread reads on
            self._digest = self._hash.hexdigest()
            self._blocks.put(None)
        except Exception as exc:  # raised to the reader, as the thread's are
            self._blocks.put(exc)
        return True

    def _read_ahead(self) -> None:
        try:
            while block := self._stream.read(self.BLOCK_BYTES):
                if not (
                    self._hand_over(self._hashing, block) and self._hand_over(self._blocks, block)
                ):
                    return
            self._hand_over(self._hashing, None)
            self._hand_over(self._blocks, None)
        except BaseException as exc:  # raised again in the parser's thread
            self._hand_over(self._hashing, False)
            self._hand_over(self._blocks, exc)

    def _hash_blocks(self) -> None:
        """Each block in turn until the end (None: the digest is made) or until told to quit
        (False: the stream failed or the parser left)."""
        while isinstance(block := self._hashing.get(), bytes):
            self._hash.update(block)
        if block is None:
            self._digest = self._hash.hexdigest()

    def _hand_over(self, to: queue.Queue[Any], item: object) -> bool:
        while not self._stop.is_set():
            try:
                to.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when ``size`` is negative), short only at
        the end of the stream, as a file's read is."""
        parts, wanted = [], size
        while wanted != 0 and self._fill():
            take = self._left if wanted < 0 else self._left[:wanted]
            self._left = self._left[len(take) :]
            parts.append(take)
            wanted = wanted - len(take) if wanted > 0 else wanted
        data = b"".join(parts)
        self.bytes_read += len(data)
        return data

    def _fill(self) -> bool:
        """Whether bytes are left to read (the next block taken when none is left over)."""
        while not self._left:
            if self._ended:
                return False
            item = self._blocks.get()
            if isinstance(item, BaseException):
                self._ended = True
                raise item
            if item is None:
                self._ended = True
                return False
            self._left = item
        return True

    def finish(self) -> str:
        """The sha256 of the whole stream; what the reader had not read is read (and counted
        in ``unread_bytes``) first."""
        before = self.bytes_read
        while self.read(self.BLOCK_BYTES):
            pass
        self.unread_bytes = self.bytes_read - before
        for thread in self._threads:
            thread.join()
        assert self._digest is not None
        return self._digest

    def close(self) -> None:
        self._stop.set()
        if self._threads:
            reading, hashing = self._threads
            reading.join()
            # the hasher never waits on anything but its queue, so there is room: it has
            # ended (after the last block) or ends here
            self._hashing.put(False)
            hashing.join()
