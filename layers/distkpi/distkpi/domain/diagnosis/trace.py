"""One profiler's Chrome-trace file read into typed events, bounded in size: PyTorch's
(Kineto) or PaddlePaddle's (`paddle.profiler`, which ends each event's name with its
duration, `matmul dygraph[149.822 us]`, and calls a launch's id `correlation id`)."""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from distkpi.exceptions import RunFolderError

MAX_TRACE_BYTES = 128 * 1024 * 1024  # of JSON: about 6x that in memory once parsed
MAX_EVENTS = 1_000_000
PADDLE_DURATION = re.compile(r"\[\d+(?:\.\d+)? (?:ns|us|ms|s)\]$")


class TraceError(RunFolderError):
    """A trace that cannot be reduced (not a Chrome trace, too large)."""


@dataclass(frozen=True, slots=True)
class Event:
    """A complete ("X") event: times in microseconds as the trace has them."""

    name: str
    cat: str
    ts: float
    dur: float
    pid: str
    tid: str
    args: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(frozen=True)
class Trace:
    """What a reduction needs from one rank's trace."""

    events: tuple[Event, ...]
    rank: int | None
    world_size: int | None
    backend: str | None


def read_trace(data: bytes, *, limit: int = MAX_TRACE_BYTES) -> Trace:
    """A trace from the bytes of a `.json` or `.json.gz` file (gzip is recognised by its
    magic number); larger than `limit` once uncompressed is a TraceError, not a memory spike."""
    text = _inflate(data, limit) if data[:2] == b"\x1f\x8b" else data
    if len(text) > limit:
        raise TraceError(f"trace is {len(text)} bytes, more than the {limit} a reduction reads")
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceError(f"not a JSON trace: {exc}") from exc
    raw = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(raw, list):
        raise TraceError("not a Chrome trace: no traceEvents list")
    if len(raw) > MAX_EVENTS:
        raise TraceError(f"trace has {len(raw)} events, more than the {MAX_EVENTS} read")
    info = doc.get("distributedInfo") if isinstance(doc, dict) else None
    info = info if isinstance(info, dict) else {}
    paddle = isinstance(doc, dict) and "span_indx" in doc  # written by Paddle's logger only
    events = (e for e in map(_event, raw) if e is not None)
    return Trace(
        events=tuple(map(_from_paddle, events) if paddle else events),
        rank=_int(info.get("rank")),
        world_size=_int(info.get("world_size")),
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
    )


def _inflate(data: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise TraceError(f"not a gzip trace: {exc}") from exc
    if len(out) > limit:
        raise TraceError(f"trace is more than {limit} bytes uncompressed")
    return out


def _event(raw: object) -> Event | None:
    if not isinstance(raw, dict) or raw.get("ph") != "X":
        return None
    ts, dur = raw.get("ts"), raw.get("dur")
    if not isinstance(ts, int | float) or not isinstance(dur, int | float) or dur < 0:
        return None
    args = raw.get("args")
    return Event(
        name=str(raw.get("name", "")),
        cat=str(raw.get("cat", "")),
        ts=float(ts),
        dur=float(dur),
        pid=str(raw.get("pid", "")),
        tid=str(raw.get("tid", "")),
        args=args if isinstance(args, dict) else {},
    )


def _from_paddle(event: Event) -> Event:
    """A Paddle event under its own name (no duration suffix) and with Kineto's `correlation`."""
    args = event.args
    if "correlation id" in args:
        args = {**args, "correlation": args["correlation id"]}
    name = PADDLE_DURATION.sub("", event.name)
    return replace(event, name=name, args=args)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
