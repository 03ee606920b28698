"""Per-line parsers for the log formats (docs/architecture.md), auto-detected line by line."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from distkpi.domain.logs.bounds import MAX_PASS, fits
from distkpi.domain.logs.linescan import Readable, scan_lines
from distkpi.domain.logs.logsummary import Level, LogSummary

# Every line any parser below accepts contains one of these.
NEEDLES: tuple[bytes, ...] = (
    b":::MLLOG",
    b"Pass",
    b"/sec",
    b"examples/se",
    b"metrics_data",
    b"kpis\t",
    b"Traceback (most recent call last)",
    b"Error Message Summary",
    b"SignalInfo: ***",
)

# Every pattern runs in time linear in the line's length: numbers are atomic groups, so a
# failed match never re-splits a run of digits, and no unbounded wildcard sits between two
# parts that can both repeat (see _paddle_iteration).
_NUM = r"((?>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?))"
_PASS_PERF = re.compile(
    rf"Pass = (\d++), Training performance = {_NUM} imgs?/s"
    rf"(?:.*?Test accuracy = {_NUM})?"
)
_PASS_ITER_HEAD = re.compile(r"Pass = \d++, Iters = \d++,")
_ITER_SPEED = re.compile(rf"Speed = {_NUM} (?:imgs?|samples|examples)/s")
_TOTAL_EXAMPLES = re.compile(rf"Total examples: \d++, total time: {_NUM}, {_NUM} examples/se[cd]")
_PASS_TEST_ACC = re.compile(rf"Pass: (\d++), Test Accuracy: {_NUM}")
_CE_KPI = re.compile(rf"\s*+kpis\t([^\t]++)\t{_NUM}\s*+$")
_METRICS = re.compile(r"\*\*metrics_data:(.*)")
_METRIC_PAIR = re.compile(rf"(?<!\w)(\w++)\s*+=\s*+{_NUM}")
_ACC_N_PASSES = re.compile(r"acc_(\d++)passes")
_HVD_PER_GPU = re.compile(rf"Img/sec per GPU: {_NUM}")
_HVD_TOTAL = re.compile(rf"Total img/sec on (\d++) GPU\(s\): {_NUM}")
_TF_TOTAL = re.compile(rf"total images/sec: {_NUM}")
_TF_STEP = re.compile(rf"\s*+\d++\s++images/sec: {_NUM}")

NUMBER_DOES_NOT_FIT = "number out of range ignored"
PASS_DOES_NOT_FIT = f"pass number over {MAX_PASS} ignored"


def _finite(text: str, out: LogSummary) -> float | None:
    value = float(text)
    if fits(value):
        return value
    out.note(NUMBER_DOES_NOT_FIT)
    return None


def _pass_number(value: object, out: LogSummary) -> int | None:
    """A pass (epoch) number, from an int or a string of digits; None, noted, when too big."""
    if isinstance(value, str):
        if len(value) > len(str(MAX_PASS)):
            out.note(PASS_DOES_NOT_FIT)
            return None
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    if value > MAX_PASS:
        out.note(PASS_DOES_NOT_FIT)
        return None
    return value


def _mllog(line: str, out: LogSummary) -> bool:
    at = line.find(":::MLLOG")
    if at == -1:
        return False
    try:
        record = json.loads(line[at + len(":::MLLOG") :])
    except (ValueError, RecursionError):
        out.note("unreadable :::MLLOG line skipped")
        return True
    if not isinstance(record, dict):
        return True
    _mllog_record(record, out)
    return True


def _number(value: Any, out: LogSummary) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if fits(number):
        return number
    out.note(NUMBER_DOES_NOT_FIT)
    return None


def _mllog_record(record: dict[str, Any], out: LogSummary) -> None:
    key = record.get("key")
    value = record.get("value")
    found = record.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    time_ms = _number(record.get("time_ms"), out)
    time_s = time_ms / 1000.0 if time_ms is not None else None
    if key == "run_start" and time_s is not None:
        out.mark_start(time_s)
    elif key == "run_stop" and metadata.get("status") not in (None, "success"):
        out.crash = out.crash or f"a run_stop with status {str(metadata.get('status'))[:40]}"
    elif key == "eval_accuracy":
        accuracy = _number(value, out)
        epoch = metadata.get("epoch_num")
        if accuracy is not None:
            out.add_accuracy(accuracy, _pass_number(epoch, out), time_s)
    elif key == "tracked_stats" and isinstance(value, dict):
        throughput = _number(value.get("throughput"), out)
        if throughput is not None and throughput > 0:
            out.add_throughput(throughput, Level.PASS)


def _paddle_pass(line: str, out: LogSummary) -> bool:
    if m := _PASS_PERF.search(line):
        _positive_throughput(m.group(2), Level.PASS, out)
        if m.group(3) is not None and (acc := _finite(m.group(3), out)) is not None:
            out.add_accuracy(acc, _pass_number(m.group(1), out), None)
        return True
    if _paddle_iteration(line, out):
        return True
    if m := _PASS_TEST_ACC.search(line):
        if (acc := _finite(m.group(2), out)) is not None:
            out.add_accuracy(acc, _pass_number(m.group(1), out), None)
        return True
    return False


def _paddle_iteration(line: str, out: LogSummary) -> bool:
    """`Pass = N, Iters = M, ... Speed = X img/s`: the speed is looked for once, after the
    first head, rather than by one pattern that would rescan the line from every head."""
    head = _PASS_ITER_HEAD.search(line)
    if head is None:
        return False
    speed = _ITER_SPEED.search(line, head.end())
    if speed is None:
        return False
    _positive_throughput(speed.group(1), Level.ITERATION, out)
    return True


def _positive_throughput(text: str, level: Level, out: LogSummary) -> None:
    value = _finite(text, out)
    if value is not None and value > 0:
        out.add_throughput(value, level)


def _paddle_summary(line: str, out: LogSummary) -> bool:
    if m := _TOTAL_EXAMPLES.search(line):
        _positive_throughput(m.group(2), Level.SUMMARY, out)
        return True
    return False


def _ce_kpi(line: str, out: LogSummary) -> bool:
    m = _CE_KPI.match(line)
    if not m:
        return False
    name, value = m.group(1).lower(), _finite(m.group(2), out)
    if value is None:
        return True
    if ("speed" in name and "converge" not in name) or "throughput" in name:
        if value > 0:
            out.add_throughput(value, Level.SUMMARY)
    elif "converge" in name:
        out.converge_speed_s = value
    elif "test_acc" in name:
        passes = _ACC_N_PASSES.search(name)
        out.add_accuracy(value, _pass_number(passes.group(1), out) if passes else None, None)
    return True


def _metrics_data(line: str, out: LogSummary) -> bool:
    m = _METRICS.search(line)
    if not m:
        return False
    pairs = {k: v for k, v in _METRIC_PAIR.findall(m.group(1))}
    if "train_speed" in pairs:
        _positive_throughput(pairs["train_speed"], Level.PASS, out)
    for key, text in pairs.items():
        passes = _ACC_N_PASSES.fullmatch(key)
        if passes and (acc := _finite(text, out)) is not None:
            out.add_accuracy(acc, _pass_number(passes.group(1), out), None)
    if "converge_speed" in pairs:
        out.converge_speed_s = _finite(pairs["converge_speed"], out)
    return True


def _horovod_tf(line: str, out: LogSummary) -> bool:
    if m := _HVD_TOTAL.search(line):
        value = _finite(m.group(2), out)
        if value is not None and value > 0:
            out.explicit_total = value
        return True
    if m := _HVD_PER_GPU.search(line):
        value = _finite(m.group(1), out)
        if value is not None and value > 0:
            out.per_gpu_throughput.add(value)
        return True
    if m := _TF_TOTAL.search(line):
        _positive_throughput(m.group(1), Level.SUMMARY, out)
        return True
    if m := _TF_STEP.match(line):
        _positive_throughput(m.group(1), Level.ITERATION, out)
        return True
    return False


# A process that died says so in its log, even when a launcher then exits 0 for it.
_CRASHES = (
    ("Traceback (most recent call last)", "a Python traceback"),
    ("Error Message Summary", "a Paddle error (Error Message Summary)"),
    ("SignalInfo: ***", "a fatal signal (SignalInfo)"),
)


def _crash(line: str, out: LogSummary) -> bool:
    for marker, what in _CRASHES:
        if marker in line:
            out.crash = out.crash or what
            return True
    return False


_PARSERS: tuple[Callable[[str, LogSummary], bool], ...] = (
    _crash,
    _mllog,
    _metrics_data,
    _ce_kpi,
    _paddle_pass,
    _paddle_summary,
    _horovod_tf,
)


def parse_line(line: str, out: LogSummary) -> bool:
    """Feed one line to the first parser that recognises it; False for an unknown line."""
    return any(parser(line, out) for parser in _PARSERS)


def parse_log(stream: Readable) -> LogSummary:
    """Stream a training log of any size into a LogSummary; never raises on bad content."""
    summary = LogSummary()
    lines, problems = scan_lines(stream, NEEDLES)
    for line in lines:
        parse_line(line, summary)
    for problem in problems.describe():
        summary.note(problem)
    return summary
