"""Reading problems become problems, never exceptions; chunking never loses a line."""

import io

import pytest

from distkpi.domain.logs import linescan
from distkpi.domain.logs.linescan import scan_lines
from distkpi.domain.logs.logformats import parse_log

PASS = b"Pass = 1, Training performance = 100.0 imgs/s\n"


def lines_of(data: bytes, needles: tuple[bytes, ...] | None = (b"Pass",)) -> list[str]:
    lines, _ = scan_lines(io.BytesIO(data), needles)
    return list(lines)


@pytest.mark.parametrize("chunk", [7, 16, 45, 46, 47, 1000])
def test_lines_across_chunk_boundaries_are_whole(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(linescan, "CHUNK_BYTES", chunk)
    data = b"noise line\n" + PASS + b"more noise\n" + PASS.replace(b"1", b"2") + b"end\n"
    assert lines_of(data) == [
        "Pass = 1, Training performance = 100.0 imgs/s",
        "Pass = 2, Training performance = 200.0 imgs/s",
    ]


def test_a_line_with_two_needles_comes_once_and_in_order() -> None:
    data = b"b Pass kpis\na\nPass c\n"
    assert lines_of(data, (b"kpis", b"Pass")) == ["b Pass kpis", "Pass c"]


def test_every_line_when_no_needles() -> None:
    assert lines_of(b"a\nb\r\n\nc\n", None) == ["a", "b", "", "c"]


def test_empty_file() -> None:
    out = parse_log(io.BytesIO(b""))
    assert out.problems == ["empty file"]
    assert out.best_throughput() is None


def test_nul_bytes_are_reported_and_the_rest_still_parses() -> None:
    out = parse_log(io.BytesIO(b"\0\0garbage\n" + PASS))
    assert out.best_throughput() is not None
    assert any("2 NUL byte(s)" in p for p in out.problems)


def test_invalid_utf8_is_reported_with_its_offset() -> None:
    out = parse_log(io.BytesIO(b"ok\n\xff\xfe Pass = 3, Training performance = 7 imgs/s\n"))
    assert out.best_throughput() is not None
    assert any("invalid UTF-8 from byte 3" in p for p in out.problems)


def test_a_truncated_last_line_is_not_parsed() -> None:
    out = parse_log(io.BytesIO(PASS + b"Pass = 2, Training performance = 9"))
    best = out.best_throughput()
    assert best is not None and best[0] == 100.0
    assert any("last line has no newline" in p for p in out.problems)


def test_over_long_lines_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linescan, "CHUNK_BYTES", 64)
    monkeypatch.setattr(linescan, "MAX_LINE_BYTES", 100)
    data = b"Pass " + b"x" * 500 + b"\n" + PASS
    out = parse_log(io.BytesIO(data))
    assert out.best_throughput() is not None
    assert any("over 100 bytes skipped" in p for p in out.problems)


def test_random_garbage_never_raises() -> None:
    import random

    rng = random.Random(7)
    for _ in range(50):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(2000)))
        parse_log(io.BytesIO(blob + b"Pass = \n:::MLLOG {\n" + blob))
