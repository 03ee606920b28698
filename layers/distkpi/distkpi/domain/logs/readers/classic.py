"""The frameworks of 2018-2020: MXNet's Speedometer and validation lines, Horovod's
benchmark totals and tf_cnn_benchmarks, and the crash markers any process leaves."""

from __future__ import annotations

import re

from distkpi.domain.logs.logsummary import (
    TEST_ACCURACY,
    THROUGHPUT_PER_GPU,
    THROUGHPUT_TOTAL,
    Level,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.readers.base import NUM, Reader, finite, pass_number, positive_throughput

_HVD_PER_GPU = re.compile(rf"Img/sec per GPU: {NUM}")
_HVD_TOTAL = re.compile(rf"Total img/sec on (\d++) GPU\(s\): {NUM}")
_TF_TOTAL = re.compile(rf"total images/sec: {NUM}")
_TF_STEP = re.compile(rf"\s*+\d++\s++images/sec: {NUM}")
_SPEEDOMETER = re.compile(rf"Epoch\[\d++\] Batch \[\d++(?:-\d++)?\]\s++Speed: {NUM} samples/sec")
_MXNET_VALIDATION = re.compile(rf"Epoch\[(\d++)\] Validation-accuracy={NUM}")

# A process that died says so in its log, even when a launcher then exits 0 for it.
_CRASHES = (
    ("Traceback (most recent call last)", "a Python traceback"),
    ("Error Message Summary", "a Paddle error (Error Message Summary)"),
    ("SignalInfo: ***", "a fatal signal (SignalInfo)"),
)


# the last line of a traceback, or the first of Paddle's error summary: `RuntimeError: ...`
_EXCEPTION_LINE = re.compile(
    r"(?:[A-Za-z_]\w*+\.)*+(?:[A-Za-z_]\w*?)?(?:Error|Exception|KeyboardInterrupt|SystemExit)"
    r"(?::.*)?"
)
MAX_CAUSE_CHARS = 300


def _crash(line: str, out: LogSummary) -> bool:
    """A marker of a crash, or (after one) the line that says what was raised: the last
    such line is the crash's cause, as a traceback's last line is."""
    for marker, what in _CRASHES:
        if marker in line:
            out.crash = out.crash or what
            return True
    if out.crash is None:
        return False
    text = line.rstrip("\r\n")
    if not _EXCEPTION_LINE.fullmatch(text):
        return False
    out.crash_cause = text[:MAX_CAUSE_CHARS]
    return True


def _horovod_tf(line: str, out: LogSummary) -> bool:
    if m := _HVD_TOTAL.search(line):
        value = finite(m.group(2), out)
        if value is not None and value > 0:
            out.observe(Observation(THROUGHPUT_TOTAL, value, "samples/s", per=Per.JOB))
        return True
    if m := _HVD_PER_GPU.search(line):
        value = finite(m.group(1), out)
        if value is not None and value > 0:
            out.observe(Observation(THROUGHPUT_PER_GPU, value, "samples/s", per=Per.CARD))
        return True
    if m := _TF_TOTAL.search(line):
        positive_throughput(m.group(1), Level.SUMMARY, out)
        return True
    if m := _TF_STEP.match(line):
        positive_throughput(m.group(1), Level.ITERATION, out)
        return True
    return False


def _mxnet(line: str, out: LogSummary) -> bool:
    """Speedometer: the batch size it was given, one worker's, over the time since its last
    report; and the epoch's `Validation-accuracy=`."""
    if m := _SPEEDOMETER.search(line):
        positive_throughput(m.group(1), Level.ITERATION, out, Per.PROCESS)
        return True
    if m := _MXNET_VALIDATION.search(line):
        if (acc := finite(m.group(2), out)) is not None:
            out.observe(Observation(TEST_ACCURACY, acc, "", pass_number(m.group(1), out)))
        return True
    return False


CRASH = Reader(
    "crash",
    (
        b"Traceback (most recent call last)",
        b"Error Message Summary",
        b"SignalInfo: ***",
        # the exception a traceback or Paddle's error summary ends with
        b"Error",
        b"Exception",
        b"KeyboardInterrupt",
        b"SystemExit",
    ),
    _crash,
)
MXNET = Reader("mxnet", (b"/sec", b"Validation-accuracy="), _mxnet)
HOROVOD_TF = Reader("horovod_tf_cnn", (b"/sec",), _horovod_tf)
