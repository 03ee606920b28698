"""Per-line parsers for the log formats (README: what each reports), auto-detected line by
line, and a suite's declared patterns (declared.py) before them."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distkpi.domain.accuracy import Accuracy, Direction
from distkpi.domain.logs.bounds import MAX_PASS, fits
from distkpi.domain.logs.declared import reader_for
from distkpi.domain.logs.linescan import Readable, scan_lines
from distkpi.domain.logs.logsummary import Level, LogSummary, Per
from distkpi.domain.patterns import DeclaredMetrics


@dataclass(frozen=True)
class ParseSettings:
    """What reading one log needs to know from its run: how its quality metric improves,
    how many throughput reports are warm-up (None: the first 5%, at least one), and the
    suite's own patterns."""

    direction: Direction = Direction.HIGHER
    warmup_reports: int | None = None
    metrics: DeclaredMetrics | None = None


DEFAULT_SETTINGS = ParseSettings()

# Every line any parser below accepts contains one of these.
NEEDLES: tuple[bytes, ...] = (
    b":::MLL",
    b":::MLPv0.5",
    b"Pass",
    b"/sec",
    b"ips: ",
    b"DLL",
    b"'training_sequences_per_second'",
    b"Validation-accuracy=",
    b"[Avg]",
    b"examples/se",
    b"metrics_data",
    b"kpis\t",
    b"Traceback (most recent call last)",
    b"Error Message Summary",
    b"SignalInfo: ***",
    # the exception a traceback or Paddle's error summary ends with (_crash)
    b"Error",
    b"Exception",
    b"KeyboardInterrupt",
    b"SystemExit",
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
_PASS_TEST_ACC = re.compile(rf"Pass: (\d++),(?: Loss: {_NUM} ?+,)? Test Accuracy: {_NUM}")
_CE_KPI = re.compile(rf"\s*+kpis\t([^\t]++)\t{_NUM}\s*+$")
_METRICS = re.compile(r"\*\*metrics_data:(.*)")
_METRIC_PAIR = re.compile(rf"(?<!\w)(\w++)\s*+=\s*+{_NUM}")
_ACC_N_PASSES = re.compile(r"acc_(\d++)passes")
_HVD_PER_GPU = re.compile(rf"Img/sec per GPU: {_NUM}")
_HVD_TOTAL = re.compile(rf"Total img/sec on (\d++) GPU\(s\): {_NUM}")
_TF_TOTAL = re.compile(rf"total images/sec: {_NUM}")
_TF_STEP = re.compile(rf"\s*+\d++\s++images/sec: {_NUM}")
_MLL_V06 = re.compile(rf":::MLL {_NUM} (\w++): ")
_MLP_V05 = re.compile(rf":::MLPv0\.5\.0 \S++ {_NUM} \([^)]*+\) (\w++)(?:: )?+")
# PaddleClas/PaddleNLP/PaddleDetection: `ips: 343.96 images/sec` per card; `ips: 127.0.0.1`
# (the node list) has no unit after its number, so it is never a report
_PADDLE_IPS = re.compile(rf"(?<![\w.])ips: {_NUM} ([A-Za-z]++)/s(?:ec)?+(?![\w])")
_NOT_SAMPLES = frozenset({"step", "steps", "batch", "batches", "it", "its", "iter", "iters"})
_DLL_TEXT = re.compile(r"DLL \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d++)? - ")
_DLL_PAIR = re.compile(rf"(?<![\w./-])([\w./-]++) : {_NUM}")
_NUMBER = re.compile(_NUM)
_PADDLECLAS_EVAL = re.compile(rf"\[Eval\]\[Epoch (\d++)\]\[Avg\].*?\btop1: {_NUM}")
_BERT_FINAL = re.compile(rf"'training_sequences_per_second': {_NUM}")
_SPEEDOMETER = re.compile(rf"Epoch\[\d++\] Batch \[\d++(?:-\d++)?\]\s++Speed: {_NUM} samples/sec")
_MXNET_VALIDATION = re.compile(rf"Epoch\[(\d++)\] Validation-accuracy={_NUM}")

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


def _mllog_accuracy(value: Any, out: LogSummary) -> Accuracy | None:
    """A number, or an object of named numbers (Mask R-CNN's BBOX and SEGM)."""
    if not isinstance(value, dict):
        return _number(value, out)
    parts = {str(k)[:100]: _number(v, out) for k, v in list(value.items())[:100]}
    kept = {k: v for k, v in parts.items() if v is not None}
    return kept or None


def _ml_run_start(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    if time_s is not None:
        out.mark_start(time_s)


def _ml_run_stop(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    status = metadata.get("status")
    if status == "aborted":  # MLPerf's word for a run that did not reach its target
        out.aborted = True
    elif status not in (None, "success"):
        out.crash = out.crash or f"a run_stop with status {str(status)[:40]}"


def _ml_eval_accuracy(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    accuracy = _mllog_accuracy(value, out)
    if accuracy is not None:
        out.add_accuracy(accuracy, _pass_number(metadata.get("epoch_num"), out), time_s)


def _ml_tracked_stats(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    if isinstance(value, dict):
        throughput = _number(value.get("throughput"), out)
        if throughput is not None and throughput > 0:
            out.add_throughput(throughput, Level.PASS)


def _ml_train_samples(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    samples = _number(value, out)
    if samples is not None and samples > 0:
        out.train_samples = samples


def _ml_epoch(stop: bool) -> _MlHandler:
    def mark(value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary) -> None:
        epoch = _pass_number(metadata.get("epoch_num"), out)
        if epoch is not None and time_s is not None:
            out.mark_epoch(epoch, time_s, stop)

    return mark


def _ml_throughput(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    """NVIDIA's MLPerf code logs its own `throughput` key: the whole job's rate."""
    throughput = _number(value, out)
    if throughput is not None and throughput > 0:
        out.add_throughput(throughput, Level.PASS, Per.JOB)


_MlHandler = Callable[[Any, dict[str, Any], float | None, LogSummary], None]
_ML_KEYS: dict[str, _MlHandler] = {
    "run_start": _ml_run_start,
    "run_stop": _ml_run_stop,
    "eval_accuracy": _ml_eval_accuracy,
    "tracked_stats": _ml_tracked_stats,
    "throughput": _ml_throughput,
    "train_samples": _ml_train_samples,
    "epoch_start": _ml_epoch(stop=False),
    "epoch_stop": _ml_epoch(stop=True),
}


def _mllog_record(record: dict[str, Any], out: LogSummary) -> None:
    handler = _ML_KEYS.get(record.get("key"))  # type: ignore[arg-type]
    if handler is None:
        return
    found = record.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    time_ms = _number(record.get("time_ms"), out)
    handler(record.get("value"), metadata, time_ms / 1000.0 if time_ms is not None else None, out)


def _mlp_v05(line: str, out: LogSummary) -> bool:
    """MLPerf v0.5: `:::MLPv0.5.0 <benchmark> <unix seconds> (<file>:<line>) <key>[: <json>]`;
    an eval_accuracy is `{"epoch": N, "value": x}`, a run_stop `{"success": false}` a run
    that did not reach its target."""
    m = _MLP_V05.search(line)
    if m is None:
        return False
    seconds = _finite(m.group(1), out)
    rest = line[m.end() :].strip()
    try:
        value = json.loads(rest) if rest else None
    except (ValueError, RecursionError):
        value = rest
    metadata: dict[str, Any] = {}
    if isinstance(value, dict) and m.group(2) == "eval_accuracy":
        metadata["epoch_num"] = value.get("epoch")
        value = value.get("value")
    if isinstance(value, dict) and m.group(2) == "run_stop" and value.get("success") is False:
        metadata["status"] = "aborted"
    if seconds is not None:
        record = {"key": m.group(2), "value": value, "metadata": metadata}
        _mllog_record({**record, "time_ms": seconds * 1000.0}, out)
    return True


def _mll_v06(line: str, out: LogSummary) -> bool:
    """MLPerf v0.5/v0.6: `:::MLL <unix seconds> <key>: {"value": ..., "metadata": ...}`."""
    m = _MLL_V06.search(line)
    if m is None:
        return False
    try:
        body = json.loads(line[m.end() :])
    except (ValueError, RecursionError):
        out.note("unreadable :::MLL line skipped")
        return True
    seconds = _finite(m.group(1), out)
    if isinstance(body, dict) and seconds is not None:
        _mllog_record({**body, "key": m.group(2), "time_ms": seconds * 1000.0}, out)
    return True


def _paddle_pass(line: str, out: LogSummary) -> bool:
    if m := _PASS_PERF.search(line):
        _positive_throughput(m.group(2), Level.PASS, out)
        if m.group(3) is not None and (acc := _finite(m.group(3), out)) is not None:
            out.add_accuracy(acc, _pass_number(m.group(1), out), None)
        return True
    if _paddle_iteration(line, out):
        return True
    if m := _PASS_TEST_ACC.search(line):
        if (acc := _finite(m.group(3), out)) is not None:
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


def _positive_throughput(text: str, level: Level, out: LogSummary, per: Per = Per.PROCESS) -> None:
    value = _finite(text, out)
    if value is not None and value > 0:
        out.add_throughput(value, level, per)


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


def _paddle_ips(line: str, out: LogSummary) -> bool:
    """PaddleClas/NLP/Detection training steps: `... ips: 343.96 images/sec`, per card."""
    m = _PADDLE_IPS.search(line)
    if m is None:
        return False
    if m.group(2).lower() not in _NOT_SAMPLES and "[Eval]" not in line and "[EVAL]" not in line:
        _positive_throughput(m.group(1), Level.ITERATION, out, Per.CARD)
    return True


def _paddleclas_eval(line: str, out: LogSummary) -> bool:
    """PaddleClas's epoch evaluation: `[Eval][Epoch 400][Avg]CELoss: ..., top1: 0.36560`."""
    m = _PADDLECLAS_EVAL.search(line)
    if m is None:
        return False
    if (acc := _finite(m.group(2), out)) is not None:
        out.add_accuracy(acc, _pass_number(m.group(1), out), None)
    return True


def _train_rate(name: str) -> bool:
    """A DLLogger key naming a training rate (`train.total_ips`, `throughput_train`,
    `training_sequences_per_second`), not an evaluation's or a compute-only one."""
    name = name.lower()
    if any(word in name for word in ("val", "eval", "infer", "test", "predict", "compute")):
        return False
    rate = name.endswith(("ips", "_per_second", "/s", "/sec"))
    return "throughput" in name or rate


def _dllogger_data(
    data: dict[str, Any], summary: bool, out: LogSummary, epoch: int | None = None
) -> None:
    rate_seen = False
    for name, value in data.items():
        if not isinstance(name, str):
            continue
        if not rate_seen and _train_rate(name):
            rate_seen = True
            rate = _number(value, out)
            if rate is not None and rate > 0:
                out.add_throughput(rate, Level.SUMMARY if summary else Level.ITERATION, Per.JOB)
        elif name == "val.top1":  # DeepLearningExamples logs top-1 in percent
            top1 = _number(value, out)
            if top1 is not None:
                out.add_accuracy(top1 / 100.0, None if summary else epoch, None)


def _dllogger(line: str, out: LogSummary) -> bool:
    """NVIDIA DLLogger, rank 0's figures for the whole job: text backend `DLL <date> <time>
    - <step> key : value ...` (`()` or `Summary:` is the run's summary), and JSON backend
    `DLLL {"step": [], "data": {...}}` (an empty step is the summary)."""
    at = line.find("DLLL ")
    if at != -1:
        try:
            record = json.loads(line[at + len("DLLL ") :])
        except (ValueError, RecursionError):
            out.note("unreadable DLLL line skipped")
            return True
        if isinstance(record, dict) and isinstance(record.get("data"), dict):
            step = record.get("step")
            epoch = _pass_number(step[0], out) if isinstance(step, list) and step else None
            _dllogger_data(record["data"], step == [], out, epoch)
        return True
    m = _DLL_TEXT.search(line)
    if m is None:
        return False
    rest = line[m.end() :]
    if "|" in rest:
        step, *parts = rest.split("|")
        if step.strip() != "PARAMETER":
            _dllogger_data(_bar_pairs(parts, out), step.strip() in ("", "()"), out)
        return True
    summary = rest.startswith("()") or rest.startswith("Summary:")
    pairs = {name: text for name, text in _DLL_PAIR.findall(rest)}
    numbers = {}
    for name, text in pairs.items():
        if (value := _finite(text, out)) is not None:
            numbers[name] = value
    _dllogger_data(numbers, summary, out)
    return True


def _bar_pairs(parts: list[str], out: LogSummary) -> dict[str, float]:
    """DLLogger metrics after a `|` (NVIDIA RNN-T's and GNN's formats: `| avg train utts/s
    5860 | took 47.44 s`, `| train_acc : 0.7024 %`): a name, a number, perhaps a unit."""
    pairs: dict[str, float] = {}
    for part in parts:
        words = part.split()
        for at in (len(words) - 1, len(words) - 2):
            if at >= 1 and _NUMBER.fullmatch(words[at]):
                if (value := _finite(words[at], out)) is not None:
                    pairs[" ".join(words[:at]).rstrip(" :")] = value
                break
    return pairs


def _bert_final(line: str, out: LogSummary) -> bool:
    """NVIDIA BERT's last line, a dict: `{'e2e_time': ..., 'training_sequences_per_second':
    ...}`, for the whole job."""
    m = _BERT_FINAL.search(line)
    if m is None:
        return False
    _positive_throughput(m.group(1), Level.SUMMARY, out, Per.JOB)
    return True


def _mxnet(line: str, out: LogSummary) -> bool:
    """MXNet's Speedometer (`Epoch[0] Batch [20-40]\tSpeed: ... samples/sec`, the batch size
    it was given, one worker's, over the time since its last report) and the epoch's
    `Validation-accuracy=`."""
    if m := _SPEEDOMETER.search(line):
        _positive_throughput(m.group(1), Level.ITERATION, out, Per.PROCESS)
        return True
    if m := _MXNET_VALIDATION.search(line):
        if (acc := _finite(m.group(2), out)) is not None:
            out.add_accuracy(acc, _pass_number(m.group(1), out), None)
        return True
    return False


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


_PARSERS: tuple[Callable[[str, LogSummary], bool], ...] = (
    _crash,
    _mllog,
    _mll_v06,
    _mlp_v05,
    _dllogger,
    _bert_final,
    _metrics_data,
    _ce_kpi,
    _paddle_pass,
    _paddle_summary,
    _paddleclas_eval,
    _paddle_ips,
    _mxnet,
    _horovod_tf,
)


def parse_line(line: str, out: LogSummary) -> bool:
    """Feed one line to the first parser that recognises it; False for an unknown line."""
    return any(parser(line, out) for parser in _PARSERS)


def parse_log(stream: Readable, settings: ParseSettings = DEFAULT_SETTINGS) -> LogSummary:
    """Stream a training log of any size into a LogSummary; never raises on bad content."""
    declared = reader_for(settings.metrics) if settings.metrics is not None else None
    summary = LogSummary(
        direction=settings.direction,
        warmup_reports=settings.warmup_reports,
        declared=settings.metrics.kpis() if settings.metrics is not None else (),
    )
    lines, problems = scan_lines(stream, NEEDLES, declared.triggers if declared else ())
    for line in lines:
        if declared is not None:
            declared.read(line, summary)
        parse_line(line, summary)
    for problem in problems.describe():
        summary.note(problem)
    return summary
