"""The digest read beside the parse: the same bytes and the same sha256 as reading in series,
errors raised to the parser, and no thread left behind whatever the parser does."""

from __future__ import annotations

import hashlib
import io
import threading
from pathlib import Path

import pytest

from distkpi.domain.logs.logformats import parse_log
from distkpi.domain.signing import HashingReader

ROOT = Path(__file__).resolve().parents[2]
SEED_LOG = ROOT / "examples" / "seed-run" / "4x8-8ps" / "logs" / "trainer-0.log"


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 1 KiB, so that a small real log spans many of them."""
    monkeypatch.setattr(HashingReader, "BLOCK_BYTES", 1024)


def test_the_parse_and_the_digest_are_those_of_reading_in_series() -> None:
    data = SEED_LOG.read_bytes()
    assert len(data) > 10 * HashingReader.BLOCK_BYTES
    with HashingReader(io.BytesIO(data)) as stream:
        summary = parse_log(stream)
        digest = stream.finish()
    assert digest == hashlib.sha256(data).hexdigest()
    assert summary == parse_log(io.BytesIO(data))


def test_reads_smaller_than_a_block_give_every_byte_in_order() -> None:
    data = bytes(range(256)) * 20
    with HashingReader(io.BytesIO(data)) as stream:
        got = b"".join(iter(lambda: stream.read(100), b""))
        assert stream.read(100) == b""
        assert stream.finish() == hashlib.sha256(data).hexdigest()
    assert got == data


def test_finish_hashes_what_the_parser_left_unread() -> None:
    data = SEED_LOG.read_bytes()
    with HashingReader(io.BytesIO(data)) as stream:
        stream.read(10)
        assert stream.finish() == hashlib.sha256(data).hexdigest()


class BreaksAfter(io.BytesIO):
    """A stream that fails part way, as an S3 body whose connection drops."""

    def __init__(self, data: bytes, good_reads: int) -> None:
        super().__init__(data)
        self.good_reads = good_reads

    def read(self, size: int | None = -1) -> bytes:
        if self.good_reads == 0:
            raise ConnectionResetError("connection reset by peer")
        self.good_reads -= 1
        return super().read(size)


def test_an_error_reading_the_stream_is_raised_to_the_parser() -> None:
    threads = threading.active_count()
    with HashingReader(BreaksAfter(b"x" * 10_000, good_reads=3)) as stream:
        for _ in range(3):
            assert stream.read(1024) == b"x" * 1024
        with pytest.raises(ConnectionResetError, match="reset by peer"):
            stream.read(1024)
    assert threading.active_count() == threads


def test_a_parser_that_stops_early_leaves_no_thread_behind() -> None:
    threads = threading.active_count()
    with pytest.raises(ZeroDivisionError), HashingReader(io.BytesIO(b"y" * 100_000)) as stream:
        stream.read(1024)
        raise ZeroDivisionError  # a parser bug, with blocks still read ahead
    assert threading.active_count() == threads


def test_reads_are_a_files_reads_across_blocks() -> None:
    """read(n) gives n bytes while there are, read() all that is left (s3transfer reads a
    size it treats as the whole when the answer is shorter): short only at the end."""
    data = SEED_LOG.read_bytes()
    with HashingReader(io.BytesIO(data)) as stream:
        first = stream.read(3 * HashingReader.BLOCK_BYTES + 7)
        rest = stream.read()
        assert stream.read() == b"" and stream.read(5) == b""
        digest = stream.finish()
    assert len(first) == 3 * HashingReader.BLOCK_BYTES + 7
    assert first + rest == data
    assert digest == hashlib.sha256(data).hexdigest()
    assert stream.bytes_read == len(data) and stream.unread_bytes == 0


def test_what_the_reader_left_is_counted_as_unread() -> None:
    data = SEED_LOG.read_bytes()
    with HashingReader(io.BytesIO(data)) as stream:
        stream.read(100)
        assert stream.finish() == hashlib.sha256(data).hexdigest()
    assert stream.unread_bytes == len(data) - 100


class ShortReads(io.BytesIO):
    """A stream whose reads stop short of the size asked, before its end, as a socket's may."""

    def read(self, size: int | None = -1) -> bytes:
        return super().read(min(300, size) if size is not None and size >= 0 else size)


def test_only_a_stream_longer_than_a_block_is_read_by_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[threading.Thread] = []

    class Recorded(threading.Thread):
        def start(self) -> None:
            started.append(self)
            super().start()

    monkeypatch.setattr(threading, "Thread", Recorded)
    data = SEED_LOG.read_bytes()
    for size in (0, 1000, HashingReader.BLOCK_BYTES, HashingReader.BLOCK_BYTES + 1, len(data)):
        with HashingReader(io.BytesIO(data[:size])) as stream:
            assert stream.read() == data[:size]
            assert stream.finish() == hashlib.sha256(data[:size]).hexdigest()
        assert stream.bytes_read == size and stream.unread_bytes == 0
    # a block exactly: whether more follows is the threads' to find out; each of the three
    # streams read on has two, one reading and one hashing
    assert len(started) == 3 * 2


def test_a_first_read_short_of_the_end_reads_on_to_the_end() -> None:
    data = SEED_LOG.read_bytes()
    with HashingReader(ShortReads(data)) as stream:
        got = b"".join(iter(lambda: stream.read(700), b""))
        assert stream.finish() == hashlib.sha256(data).hexdigest()
    assert got == data


def test_an_error_on_the_first_read_is_raised_to_the_parser() -> None:
    with (
        HashingReader(BreaksAfter(b"z" * 100, good_reads=0)) as stream,
        pytest.raises(ConnectionResetError, match="reset by peer"),
    ):
        stream.read(10)
