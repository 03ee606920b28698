"""MLPerf's logs: MLLOG (v0.7 on, `:::MLLOG {json}`), v0.6 (`:::MLL <seconds> <key>: {json}`)
and v0.5 (`:::MLPv0.5.0 <benchmark> <seconds> (<file>:<line>) <key>[: <json>]`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from distkpi.domain.logs.logsummary import (
    STEP_TIME_S,
    TEST_ACCURACY,
    THROUGHPUT,
    TRAINING_LOSS,
    Level,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.mlperf_rules import rule_for
from distkpi.domain.logs.readers.base import NUM, Reader, finite, number, pass_number

_MLL_V06 = re.compile(rf":::MLL {NUM} (\w++): ")
_MLP_V05 = re.compile(rf":::MLPv0\.5\.0 \S++ {NUM} \([^)]*+\) (\w++)(?:: )?+")
MAX_NAME = 100


def _accuracy(value: Any, out: LogSummary) -> float | dict[str, float] | None:
    """A number, or an object of named numbers (Mask R-CNN's BBOX and SEGM)."""
    if not isinstance(value, dict):
        return number(value, out)
    parts = {str(k)[:MAX_NAME]: number(v, out) for k, v in list(value.items())[:MAX_NAME]}
    kept = {k: v for k, v in parts.items() if v is not None}
    return kept or None


def _run_start(value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary) -> None:
    if time_s is not None:
        out.mark_start(time_s)


def _run_stop(value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary) -> None:
    status = metadata.get("status")
    if status == "aborted":  # MLPerf's word for a run that did not reach its target
        out.aborted = True
    elif status == "success" and time_s is not None:
        out.run_stop_s = time_s
    elif status not in (None, "success"):
        out.crash = out.crash or f"a run_stop with status {str(status)[:40]}"


def _eval_accuracy(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    metric = metadata.get("metric")
    if isinstance(metric, str) and metric and not isinstance(value, dict):
        # one of several metrics, each on its own line (Stable Diffusion's FID and CLIP)
        part = number(value, out)
        if part is not None:
            when = (metadata.get(k) for k in ("epoch_num", "step_num", "samples_count"))
            key = "|".join(str(v)[:40] if isinstance(v, int | float | str) else "" for v in when)
            epoch = pass_number(metadata.get("epoch_num"), out)
            name = metric[:MAX_NAME]
            out.observe(
                Observation(TEST_ACCURACY, part, "", epoch, kind=name, time_s=time_s, part_of=key)
            )
        return
    accuracy = _accuracy(value, out)
    if accuracy is not None:
        out.observe(
            Observation(
                TEST_ACCURACY,
                accuracy,
                "",
                pass_number(metadata.get("epoch_num"), out),
                time_s=time_s,
            )
        )


def _step_time(seconds: float | None, out: LogSummary) -> None:
    """A step's time; with the log's global batch size, a job-level samples/s too."""
    if seconds is None or seconds <= 0:
        return
    out.observe(Observation(STEP_TIME_S, seconds, "s", per=Per.JOB))
    if out.global_batch is not None:
        out.observe(
            Observation(
                THROUGHPUT,
                out.global_batch / seconds,
                "samples/s",
                level=Level.ITERATION,
                per=Per.JOB,
            )
        )


def _tracked_stats(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    if isinstance(value, dict):
        throughput = number(value.get("throughput"), out)
        if throughput is not None and throughput > 0:
            out.observe(Observation(THROUGHPUT, throughput, "samples/s", level=Level.PASS))
        if "train_step_time" in value:
            _step_time(number(value.get("train_step_time"), out), out)


def _train_step_time(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    _step_time(number(value, out), out)


def _train_loss(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    """The training loss (Llama 2 LoRA logs it by `samples_count`; a step only from
    `step_num`), not the evaluation the target is on."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if math.isfinite(value) and number(value, out) is None:
        return
    out.observe(
        Observation(TRAINING_LOSS, float(value), "", pass_number(metadata.get("step_num"), out))
    )


def _train_samples(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    samples = number(value, out)
    if samples is not None and samples > 0:
        out.train_samples = samples


def _shape(field: str) -> _Handler:
    def keep(value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary) -> None:
        size = number(value, out)
        if size is not None and size >= 1 and size == int(size):
            setattr(out, field, int(size))

    return keep


def _submission_benchmark(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    """MLPerf's rules fix the benchmark's quality metric and its direction: the log is read
    in it (a run stating another is told so by mlperf_rules.direction_problem)."""
    if not isinstance(value, str):
        return
    out.benchmark = value[:MAX_NAME]
    rule = rule_for(value)
    if rule is None:
        return
    if rule.direction is not out.direction and out.accuracy_frontier:
        out.note(f"submission_benchmark {out.benchmark} after its first evaluation")
    out.direction = rule.direction
    out.part_directions = dict(rule.parts)


def _epoch(stop: bool) -> _Handler:
    def mark(value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary) -> None:
        epoch = pass_number(metadata.get("epoch_num"), out)
        if epoch is not None and time_s is not None:
            out.mark_epoch(epoch, time_s, stop)

    return mark


def _throughput(
    value: Any, metadata: dict[str, Any], time_s: float | None, out: LogSummary
) -> None:
    """NVIDIA's MLPerf code logs its own `throughput` key: the whole job's rate."""
    throughput = number(value, out)
    if throughput is not None and throughput > 0:
        out.observe(Observation(THROUGHPUT, throughput, "samples/s", level=Level.PASS, per=Per.JOB))


_Handler = Callable[[Any, dict[str, Any], float | None, LogSummary], None]
_KEYS: dict[str, _Handler] = {
    "run_start": _run_start,
    "run_stop": _run_stop,
    "eval_accuracy": _eval_accuracy,
    "tracked_stats": _tracked_stats,
    "throughput": _throughput,
    "train_samples": _train_samples,
    "train_loss": _train_loss,
    "train_step_time": _train_step_time,
    "global_batch_size": _shape("global_batch"),
    "max_sequence_length": _shape("seq_len"),
    "submission_benchmark": _submission_benchmark,
    "epoch_start": _epoch(stop=False),
    "epoch_stop": _epoch(stop=True),
}


def _record(record: dict[str, Any], out: LogSummary) -> None:
    handler = _KEYS.get(record.get("key"))  # type: ignore[arg-type]
    if handler is None:
        return
    found = record.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    time_ms = number(record.get("time_ms"), out)
    handler(record.get("value"), metadata, time_ms / 1000.0 if time_ms is not None else None, out)


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
    _record(record, out)
    return True


def _mlp_v05(line: str, out: LogSummary) -> bool:
    """An eval_accuracy is `{"epoch": N, "value": x}`, a run_stop `{"success": false}` a run
    that did not reach its target."""
    m = _MLP_V05.search(line)
    if m is None:
        return False
    seconds = finite(m.group(1), out)
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
        _record({**record, "time_ms": seconds * 1000.0}, out)
    return True


def _mll_v06(line: str, out: LogSummary) -> bool:
    m = _MLL_V06.search(line)
    if m is None:
        return False
    try:
        body = json.loads(line[m.end() :])
    except (ValueError, RecursionError):
        out.note("unreadable :::MLL line skipped")
        return True
    seconds = finite(m.group(1), out)
    if isinstance(body, dict) and seconds is not None:
        _record({**body, "key": m.group(2), "time_ms": seconds * 1000.0}, out)
    return True


def _mlperf(line: str, out: LogSummary) -> bool:
    return _mllog(line, out) or _mll_v06(line, out) or _mlp_v05(line, out)


READER = Reader("mlperf", (b":::MLL", b":::MLPv0.5"), _mlperf)
