"""torchtitan's step line, rank 0's (usually behind torchrun's `[rank0]:` and in colour):
`step: 10  loss: 7.8  grad_norm: 1.2  memory: 33.94GiB(42.81%)  tps: 6,697  tflops: 312.4
mfu: 31.6%`.

`tps` is tokens/s of one device (thousands separated), `tflops` that device's model TFLOP/s,
`mfu` percent of its peak (read as a fraction), `memory` its peak reserved memory in GiB."""

from __future__ import annotations

import re

from distkpi.domain.logs.logsummary import (
    GPU_MEMORY,
    MFU,
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
    without_separators,
)

_STEP = re.compile(r"\bstep:\s*+(\d++)\s")
_LOSS = re.compile(rf"\bloss:\s*+{LOSS}")
_MEMORY = re.compile(rf"\bmemory:\s*+{NUM}\s*+GiB")
_TPS = re.compile(r"\btps:\s*+(\d{1,3}+(?:,\d{3})*+(?:\.\d++)?+)(?![\d,])")
_TFLOPS = re.compile(rf"\btflops:\s*+{NUM}")
_MFU = re.compile(rf"\bmfu:\s*+{NUM}%")


def _step(line: str, out: LogSummary) -> bool:
    tps = _TPS.search(line)
    step = _STEP.search(line)
    if tps is None or step is None:
        return False
    number = step_number(step.group(1))
    if (rate := positive(without_separators(tps.group(1)), out)) is not None:
        out.observe(Observation(TOKENS_PER_S, rate, "tokens/s", number, Per.CARD))
    if (m := _TFLOPS.search(line)) and (tflops := positive(m.group(1), out)) is not None:
        out.observe(Observation(TFLOPS_PER_GPU, tflops, "TFLOP/s", number, Per.CARD))
    if (m := _MFU.search(line)) and (mfu := positive(m.group(1), out)) is not None:
        out.observe(Observation(MFU, mfu, "%", number, Per.CARD))
    if (m := _MEMORY.search(line)) and (gib := positive(m.group(1), out)) is not None:
        out.observe(Observation(GPU_MEMORY, gib, "GiB", number, kind="max reserved"))
    if m := _LOSS.search(line):
        loss(pass_number(step.group(1), out), m.group(1), out)
    return True


READER = Reader("torchtitan", (b"tps: ",), _step)
