"""MaxText's step line: `completed step: 10, seconds: 131.474, TFLOP/s/device: 314.530,
Tokens/s/device: 124.618, total_weights: 8388608, loss: 4.453`.

`seconds` is the step's time (one step of the whole job); TFLOP/s and tokens/s are per
device (a TPU chip, or a GPU). Under asynchronous dispatch a step's `seconds` is when the
host got on, not when the device finished (a step of 0.01 s then reports 20x a chip's
peak): the rates are averaged as total work over total time, each weighted by its step's
seconds, never as a mean of per-step rates."""

from __future__ import annotations

import re

from distkpi.domain.logs.logsummary import (
    STEP_TIME_S,
    TFLOPS_PER_GPU,
    TOKENS_PER_S,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.readers.base import (
    LOSS,
    NUM,
    Reader,
    loss,
    pass_number,
    positive,
    step_number,
)

_STEP = re.compile(r"completed step: (\d++),")
_SECONDS = re.compile(rf"\bseconds: {NUM}")
_TFLOPS = re.compile(rf"\bTFLOP/s/device: {NUM}")
_TOKENS = re.compile(rf"\bTokens/s/device: {NUM}")
_LOSS = re.compile(rf"(?<![\w/])loss: {LOSS}")


def _rates(line: str, rest: int, step: int | None, seconds: float, out: LogSummary) -> None:
    """The step's rates, each weighed by its seconds (a rate without them is left out)."""
    if (m := _TFLOPS.search(line, rest)) and (tflops := positive(m.group(1), out)):
        out.observe(Observation(TFLOPS_PER_GPU, tflops, "TFLOP/s", step, Per.CARD, seconds=seconds))
    if (m := _TOKENS.search(line, rest)) and (tokens := positive(m.group(1), out)):
        out.observe(Observation(TOKENS_PER_S, tokens, "tokens/s", step, Per.CARD, seconds=seconds))


def _step(line: str, out: LogSummary) -> bool:
    step = _STEP.search(line)
    if step is None:
        return False
    rest = step.end()
    number = step_number(step.group(1))
    if (m := _SECONDS.search(line, rest)) and (seconds := positive(m.group(1), out)):
        out.observe(Observation(STEP_TIME_S, seconds, "s", number, Per.JOB))
        _rates(line, rest, number, seconds, out)
    if m := _LOSS.search(line, rest):
        loss(pass_number(step.group(1), out), m.group(1), out)
    return True


READER = Reader("maxtext", (b"completed step: ",), _step)
