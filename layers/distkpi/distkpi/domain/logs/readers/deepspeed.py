"""DeepSpeed's engine and its examples.

The engine's ThroughputTimer line, rank 0's, every `steps_per_print`: `epoch=0/micro_step=10/
global_step=10, RunningAvgSamplesPerSec=110.8, CurrSamplesPerSec=111.3, MemAllocated=1.87GB,
MaxMemAllocated=6.12GB` (older releases: `SamplesPerSec=` alone, a running average). The
timer is given the train batch size (micro batch x accumulation x data-parallel ranks), so
samples/s is the whole job's; memory is that rank's, in GiB (bytes / 2^30). Its optimizer
line `[Rank 0] step=1890, skipped=19, ...` counts the skipped (overflowed) steps so far.
The examples' evaluations: DeepSpeed-Chat's `ppl: 5.12, loss: 1.63` (step 1's perplexity)
and random-LTD's printed dict `'step':1047, 'ppl': 23.98, ...`: a perplexity is lower is
better by definition, so the line fixes the log's direction (as an MLPerf log's benchmark
does; a run stating higher is told so); `..., acc (higher is better) : 0.65` (step 2's
reward model), and CIFAR's `Accuracy of the network on the 10000 test images: 57 %` (in
percent). DeepSpeed-Chat's own `Model Parameters: 0.331 B, Latency: 0.27s, TFLOPs: 1.02,
Samples/sec: 7.28, ...` (print_throughput, every micro step) gives TFLOP/s per card as the
framework reports it; its Samples/sec, one process's micro batch over the latency, is not
the job's and is left to the engine's timer."""

from __future__ import annotations

import re

from distkpi.domain.accuracy import Direction
from distkpi.domain.logs.logsummary import (
    GPU_MEMORY,
    TEST_ACCURACY,
    TFLOPS_PER_GPU,
    THROUGHPUT,
    Level,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.readers.base import NUM, Reader, finite, positive

_CURRENT = re.compile(rf"\bCurrSamplesPerSec={NUM}")
_AVERAGE = re.compile(rf"(?<![A-Za-z])SamplesPerSec={NUM}")
_MAX_MEMORY = re.compile(rf"\bMaxMemAllocated={NUM}GB")
_SKIPPED = re.compile(r"\bstep=\d++, skipped=(\d++),")
_PPL = re.compile(rf"(?<![\w.])(?:ppl|'ppl'): {NUM}")
_CHAT_TFLOPS = re.compile(rf"\bLatency: {NUM}s, TFLOPs: {NUM},")
_CHAT_ACC = re.compile(rf"\bacc \(higher is better\) : {NUM}")
_CIFAR_ACC = re.compile(rf"Accuracy of the network on the \d++ test images: {NUM} ?%")


def _timer(line: str, out: LogSummary) -> bool:
    rate = _CURRENT.search(line) or _AVERAGE.search(line)
    if rate is None:
        return _optimizer(line, out)
    if (value := positive(rate.group(1), out)) is not None:
        out.observe(Observation(THROUGHPUT, value, "samples/s", per=Per.JOB, level=Level.ITERATION))
    if (m := _MAX_MEMORY.search(line)) and (gib := positive(m.group(1), out)):
        out.observe(Observation(GPU_MEMORY, gib, "GiB", kind="max allocated"))
    return True


def _optimizer(line: str, out: LogSummary) -> bool:
    m = _SKIPPED.search(line)
    if m is None:
        return False
    skipped = finite(m.group(1), out)
    if skipped is not None:
        out.skipped_iterations = max(out.skipped_iterations, int(skipped))
    return True


def _evaluation(line: str, out: LogSummary) -> bool:
    if m := _PPL.search(line):
        out.direction = Direction.LOWER
        if (ppl := positive(m.group(1), out)) is not None:
            out.observe(Observation(TEST_ACCURACY, ppl, ""))
        return True
    if m := _CHAT_TFLOPS.search(line):
        if (tflops := positive(m.group(2), out)) is not None:
            out.observe(Observation(TFLOPS_PER_GPU, tflops, "TFLOP/s", per=Per.CARD))
        return True
    if m := _CHAT_ACC.search(line):
        if (acc := finite(m.group(1), out)) is not None:
            out.observe(Observation(TEST_ACCURACY, acc, ""))
        return True
    if m := _CIFAR_ACC.search(line):
        if (percent := finite(m.group(1), out)) is not None:
            out.observe(Observation(TEST_ACCURACY, percent, "%"))
        return True
    return False


TIMER = Reader("deepspeed", (b"SamplesPerSec=", b", skipped="), _timer)
EVALUATION = Reader(
    "deepspeed_examples",
    (
        b"ppl: ",
        b"'ppl': ",
        b"acc (higher is better)",
        b"Accuracy of the network on the ",
        b", TFLOPs: ",
    ),
    _evaluation,
)
