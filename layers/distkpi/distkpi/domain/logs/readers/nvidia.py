"""NVIDIA's DeepLearningExamples: DLLogger (text `DLL <date> <time> - <step> key : value`
and JSON `DLLL {"step": [...], "data": {...}}`, rank 0's figures for the whole job), and
BERT's last line, a dict of the run's figures."""

from __future__ import annotations

import json
import re
from typing import Any

from distkpi.domain.logs.logsummary import (
    TEST_ACCURACY,
    THROUGHPUT,
    Level,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.readers.base import (
    NUM,
    NUMBER,
    Reader,
    finite,
    number,
    pass_number,
    positive_throughput,
)

_DLL_TEXT = re.compile(r"DLL \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d++)? - ")
_DLL_PAIR = re.compile(rf"(?<![\w./-])([\w./-]++) : {NUM}")
_BERT_FINAL = re.compile(rf"'training_sequences_per_second': {NUM}")


def _train_rate(name: str) -> bool:
    """A DLLogger key naming a training rate (`train.total_ips`, `throughput_train`,
    `training_sequences_per_second`), not an evaluation's or a compute-only one."""
    name = name.lower()
    if any(word in name for word in ("val", "eval", "infer", "test", "predict", "compute")):
        return False
    rate = name.endswith(("ips", "_per_second", "/s", "/sec"))
    return "throughput" in name or rate


def _data(data: dict[str, Any], summary: bool, out: LogSummary, epoch: int | None = None) -> None:
    rate_seen = False
    for name, value in data.items():
        if not isinstance(name, str):
            continue
        if not rate_seen and _train_rate(name):
            rate_seen = True
            rate = number(value, out)
            if rate is not None and rate > 0:
                out.observe(
                    Observation(
                        THROUGHPUT,
                        rate,
                        "samples/s",
                        level=Level.SUMMARY if summary else Level.ITERATION,
                        per=Per.JOB,
                    )
                )
        elif name == "val.top1":  # DeepLearningExamples logs top-1 in percent
            top1 = number(value, out)
            if top1 is not None:
                out.observe(Observation(TEST_ACCURACY, top1, "%", None if summary else epoch))


def _dllogger(line: str, out: LogSummary) -> bool:
    """`()` or `Summary:` (text) and an empty step (JSON) are the run's summary."""
    at = line.find("DLLL ")
    if at != -1:
        try:
            record = json.loads(line[at + len("DLLL ") :])
        except (ValueError, RecursionError):
            out.note("unreadable DLLL line skipped")
            return True
        if isinstance(record, dict) and isinstance(record.get("data"), dict):
            step = record.get("step")
            epoch = pass_number(step[0], out) if isinstance(step, list) and step else None
            _data(record["data"], step == [], out, epoch)
        return True
    m = _DLL_TEXT.search(line)
    if m is None:
        return False
    rest = line[m.end() :]
    if "|" in rest:
        step, *parts = rest.split("|")
        if step.strip() != "PARAMETER":
            _data(_bar_pairs(parts, out), step.strip() in ("", "()"), out)
        return True
    summary = rest.startswith("()") or rest.startswith("Summary:")
    pairs = {name: text for name, text in _DLL_PAIR.findall(rest)}
    numbers = {}
    for name, text in pairs.items():
        if (value := finite(text, out)) is not None:
            numbers[name] = value
    _data(numbers, summary, out)
    return True


def _bar_pairs(parts: list[str], out: LogSummary) -> dict[str, float]:
    """DLLogger metrics after a `|` (NVIDIA RNN-T's and GNN's formats: `| avg train utts/s
    5860 | took 47.44 s`, `| train_acc : 0.7024 %`): a name, a number, perhaps a unit."""
    pairs: dict[str, float] = {}
    for part in parts:
        words = part.split()
        for at in (len(words) - 1, len(words) - 2):
            if at >= 1 and NUMBER.fullmatch(words[at]):
                if (value := finite(words[at], out)) is not None:
                    pairs[" ".join(words[:at]).rstrip(" :")] = value
                break
    return pairs


def _bert_final(line: str, out: LogSummary) -> bool:
    """`{'e2e_time': ..., 'training_sequences_per_second': ...}`, for the whole job."""
    m = _BERT_FINAL.search(line)
    if m is None:
        return False
    positive_throughput(m.group(1), Level.SUMMARY, out, Per.JOB)
    return True


DLLOGGER = Reader("dllogger", (b"DLL",), _dllogger)
BERT_FINAL = Reader("nvidia_bert", (b"'training_sequences_per_second'",), _bert_final)
