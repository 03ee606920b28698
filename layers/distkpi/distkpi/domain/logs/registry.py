"""Every log family the engine reads, in one table: a line goes, after normalise(), to the
first reader that claims it (readers/base.py: a reader, its needles, what it emits).

Adding a family: a module under readers/ with its Reader, and its place below; the scanner's
needles follow from the table. The order matters only where two readers could claim the
same line: crash markers first, then the framework-specific formats, then the generic ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

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
from distkpi.domain.logs.readers.base import Reader, ReadLine

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


@dataclass(frozen=True)
class Registry:
    """Readers in the order they are asked, and the needles the scanner looks for."""

    readers: tuple[Reader, ...]

    @cached_property
    def needles(self) -> tuple[bytes, ...]:
        """Every line any reader accepts contains one of these (the scanner's prefilter)."""
        return tuple(dict.fromkeys(n for r in self.readers for n in r.needles))

    @cached_property
    def _reads(self) -> tuple[ReadLine, ...]:
        return tuple(reader.read for reader in self.readers)

    def read_normalised(self, line: str, out: LogSummary) -> bool:
        """Feed one normalised line to the first reader that claims it; False when none does."""
        return any(read(line, out) for read in self._reads)


REGISTRY = Registry(READERS)
NEEDLES = REGISTRY.needles


def parse_line(line: str, out: LogSummary) -> bool:
    """Feed one line to the first reader that recognises it; False for an unknown line."""
    return REGISTRY.read_normalised(normalise(line), out)
