"""Every log family the engine reads, in one table: a line goes, after normalise(), to the
first reader that claims it (readers/base.py: a reader, its needles, what it emits).

Adding a family: a module under readers/ with its Reader, and its place below; the scanner's
needles follow from the table. The order matters only where two readers could claim the
same line: crash markers first, then the framework-specific formats, then the generic ones.
"""

from __future__ import annotations

from distkpi.domain.logs.logsummary import LogSummary
from distkpi.domain.logs.normalise import normalise
from distkpi.domain.logs.readers import (
    classic,
    deepspeed,
    maxtext,
    megatron,
    mlperf,
    nvidia,
    paddle,
    torchtitan,
    trainers,
)
from distkpi.domain.logs.readers.base import Reader

READERS: tuple[Reader, ...] = (
    classic.CRASH,
    mlperf.READER,
    nvidia.DLLOGGER,
    nvidia.BERT_FINAL,
    paddle.METRICS_DATA,
    paddle.CE_KPI,
    paddle.PASS,
    paddle.SUMMARY,
    paddle.PADDLECLAS_EVAL,
    paddle.IPS,
    classic.MXNET,
    classic.HOROVOD_TF,
    megatron.READER,
    torchtitan.READER,
    maxtext.READER,
    deepspeed.TIMER,
    deepspeed.EVALUATION,
    trainers.HUGGING_FACE,
    trainers.PADDLENLP,
    trainers.LOG_METRICS,
)

# Every line any reader accepts contains one of these (the scanner's prefilter).
NEEDLES: tuple[bytes, ...] = tuple(dict.fromkeys(n for r in READERS for n in r.needles))
_READS = tuple(reader.read for reader in READERS)


def read_normalised(line: str, out: LogSummary) -> bool:
    """Feed one normalised line to the first reader that claims it; False when none does."""
    return any(read(line, out) for read in _READS)


def parse_line(line: str, out: LogSummary) -> bool:
    """Feed one line to the first reader that recognises it; False for an unknown line."""
    return read_normalised(normalise(line), out)
