"""Megatron-LM and NeMo (and Megatron-DeepSpeed): rank 0's `iteration N/ M | name: value |
...` line per log interval, and each rank's `[Rank R] (after N iterations) memory (MB) |
allocated: ... | max allocated: ...`.

An iteration line is one step of the whole job: its time (`elapsed time per iteration
(ms)`, or `(s)`), and the global batch size over it is the job's samples/s; `throughput
per GPU (TFLOP/s/GPU)` (Megatron-DeepSpeed: `TFLOPs`) is per card; `lm loss` is the
interval's mean loss; `number of nan iterations` and `number of skipped iterations` count
the interval's own, so they are summed. Memory is in MiB (Megatron divides bytes by 2^20).
Megatron-DeepSpeed's `consumed tokens` over `consumed samples` is the tokens per sample, so
the job's tokens/s is the global batch times it over the iteration time. The line's time is
the interval's average by the training loop's own timer: its samples/s is preferred
(Level.INTERVAL) to the per-step rate of DeepSpeed's timer printed in the same log."""

from __future__ import annotations

import re

from distkpi.domain.logs.logsummary import (
    GPU_MEMORY,
    STEP_TIME_S,
    TFLOPS_PER_GPU,
    THROUGHPUT,
    TOKENS_PER_S,
    Level,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.readers.base import LOSS, Reader, finite, loss, pass_number, positive

_ITERATION = re.compile(r"\biteration\s++(\d++)/\s*+\d++\s*+\|")
_PAIR = re.compile(rf"\s*+([^|:]++):\s*+{LOSS}\s*+$")
_MEMORY = re.compile(r"memory \(MB\)\s*+\|")
MAX_PARTS = 64


def _pairs(text: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for part in text.split("|", MAX_PARTS)[:MAX_PARTS]:
        if m := _PAIR.match(part):
            pairs[m.group(1).strip().lower()] = m.group(2)
    return pairs


def _count(text: str | None, out: LogSummary) -> int:
    value = finite(text, out) if text is not None else None
    return int(value) if value is not None and value > 0 and value == int(value) else 0


def _tokens_per_sample(pairs: dict[str, str], out: LogSummary) -> float | None:
    tokens, samples = pairs.get("consumed tokens"), pairs.get("consumed samples")
    if tokens is None or samples is None:
        return None
    counted, over = positive(tokens, out), positive(samples, out)
    return counted / over if counted is not None and over is not None else None


def _seconds(pairs: dict[str, str], out: LogSummary) -> float | None:
    if (ms := pairs.get("elapsed time per iteration (ms)")) is not None:
        return value / 1000.0 if (value := positive(ms, out)) is not None else None
    if (s := pairs.get("elapsed time per iteration (s)")) is not None:
        return positive(s, out)
    return None


def _iteration(line: str, out: LogSummary) -> bool:
    head = _ITERATION.search(line)
    if head is None:
        return _memory(line, out)
    pairs = _pairs(line[head.end() :])
    step = pass_number(head.group(1), out)
    batch = positive(pairs["global batch size"], out) if "global batch size" in pairs else None
    if batch is not None and batch == int(batch):
        out.global_batch = int(batch)
    seconds = _seconds(pairs, out)
    if seconds is not None:
        out.observe(Observation(STEP_TIME_S, seconds, "s", per=Per.JOB))
        if batch is not None:
            out.observe(
                Observation(
                    THROUGHPUT, batch / seconds, "samples/s", level=Level.INTERVAL, per=Per.JOB
                )
            )
            if (per_sample := _tokens_per_sample(pairs, out)) is not None:
                out.observe(
                    Observation(TOKENS_PER_S, batch * per_sample / seconds, "tokens/s", per=Per.JOB)
                )
    tflops = pairs.get("throughput per gpu (tflop/s/gpu)", pairs.get("tflops"))
    if tflops is not None and (value := positive(tflops, out)) is not None:
        out.observe(Observation(TFLOPS_PER_GPU, value, "TFLOP/s", per=Per.CARD))
    if (text := pairs.get("lm loss")) is not None:
        loss(step, text, out)
    out.nan_iterations += _count(pairs.get("number of nan iterations"), out)
    out.skipped_iterations += _count(pairs.get("number of skipped iterations"), out)
    if (seqlen := pairs.get("actual seqlen")) is not None and (n := positive(seqlen, out)):
        out.seq_len = int(n)
    return True


def _memory(line: str, out: LogSummary) -> bool:
    head = _MEMORY.search(line)
    if head is None:
        return False
    pairs = _pairs(line[head.end() :])
    for kind in ("max allocated", "max reserved"):
        if kind in pairs and (mib := finite(pairs[kind], out)) is not None and mib > 0:
            out.observe(Observation(GPU_MEMORY, mib, "MiB", kind=kind))
            break
    return True


READER = Reader("megatron", (b"elapsed time per iteration", b"memory (MB)"), _iteration)
