"""The Trainer of Hugging Face transformers (and accelerate's examples) and its PaddleNLP /
PaddleFormers twin.

Hugging Face logs a dict per logging step, rank 0's: `{'loss': 2.07, 'grad_norm': 1.3,
'learning_rate': 2e-05, 'epoch': 0.04}` (no step number: the loss is kept as the last one),
`{'eval_loss': 0.41, 'eval_accuracy': 0.86, ..., 'epoch': 1.0}`, and at the end `{'train_runtime':
1234.5, 'train_samples_per_second': 8.021, ...}`: samples over the whole run, of the whole
job (the total train batch size per step), warm-up included; `train_tokens_per_second` is
per device. PaddleNLP logs `loss: 12.06, learning_rate: 2e-06, global_step: 1, ...,
max_memory_allocated: 7.55, ..., interval_samples_per_second: 0.87,
interval_tokens_per_second_per_device: 889.04, interval_hardware_tflops_per_device: 2.77,
interval_steps_per_second: 0.87, ...` per logging interval: samples/s of the whole job,
tokens/s and hardware TFLOP/s per device, memory in GiB, the step time 1 / steps per second.
Both print `Trainer.log_metrics` tables, `  train_samples_per_second =     8.021`,
`  eval_accuracy = 0.47`. An evaluation's loss is its quality only for a run whose
direction is lower (a loss or perplexity), and only when it states no accuracy."""

from __future__ import annotations

import re

from distkpi.domain.accuracy import Direction
from distkpi.domain.logs.logsummary import (
    GPU_MEMORY,
    MAX_KEPT,
    STEP_TIME_S,
    TEST_ACCURACY,
    TFLOPS_PER_GPU,
    THROUGHPUT,
    TOKENS_PER_S,
    Level,
    LogSummary,
    Observation,
    Per,
)
from distkpi.domain.logs.readers.base import (
    LOSS,
    NUM,
    Reader,
    finite,
    loss,
    pass_number,
    positive,
)

_DICT_PAIR = re.compile(rf"'(\w{{1,100}}+)': {LOSS}(?=[,}}])")
_PADDLE_PAIR = re.compile(rf"(?<![\w.])(\w{{1,100}}+): {LOSS}(?=,|\s*+$)")
_TABLE_ROW = re.compile(rf"(?<![\w.])(\w{{1,100}}+)\s*+=\s*+{NUM}\s*+$")
MAX_PAIRS = 64


def _epoch(text: str | None, out: LogSummary) -> int | None:
    """The Trainer's fractional epoch, as a pass number when it is a whole one."""
    if text is None:
        return None
    value = finite(text, out)
    if value is None or value < 0 or value != int(value):
        return None
    return pass_number(int(value), out)


def _positive(pairs: dict[str, str], key: str, out: LogSummary) -> float | None:
    text = pairs.get(key)
    return positive(text, out) if text is not None else None


def _evaluation(pairs: dict[str, str], out: LogSummary, epoch: int | None) -> None:
    if "eval_accuracy" in pairs:
        if (acc := finite(pairs["eval_accuracy"], out)) is not None:
            out.observe(Observation(TEST_ACCURACY, acc, "", epoch))
    elif out.direction is Direction.LOWER and (value := _positive(pairs, "eval_loss", out)):
        out.observe(Observation(TEST_ACCURACY, value, "", epoch))


def _steps_done(pairs: dict[str, str], rate: float, out: LogSummary) -> tuple[float, str | None]:
    """The Trainer divides the samples of the steps it planned by the runtime: a run stopped
    early (early stopping) states a rate of steps it never ran. Where the log numbers its
    steps, the rate over those it ran, and the problem saying so. A run that ran them all
    may log its last step up to one logging interval before the end, and its steps/s is
    rounded to 3 decimals: neither is read as stopping early."""
    runtime = _positive(pairs, "train_runtime", out)
    steps_per_s = _positive(pairs, "train_steps_per_second", out)
    steps = out.loss_by_step
    if runtime is None or steps_per_s is None or not steps or len(steps) >= MAX_KEPT:
        return rate, None
    planned, done = steps_per_s * runtime, max(steps)
    last_two = sorted(steps)[-2:]
    interval = last_two[-1] - last_two[0]
    if done + interval + 0.0005 * runtime >= planned * 0.99:
        return rate, None
    return rate * done / planned, (
        f"train_samples_per_second {rate:g} counts {planned:.0f} planned steps; the log's "
        f"last step is {done}: read as {rate * done / planned:.6g}"
    )


def _run_totals(pairs: dict[str, str], out: LogSummary) -> None:
    """The run's end: samples/s of the job over the whole run, tokens/s per device."""
    if (stated := _positive(pairs, "train_samples_per_second", out)) is not None:
        rate, early = _steps_done(pairs, stated, out)
        if early is not None:
            out.note(early)
        out.observe(Observation(THROUGHPUT, rate, "samples/s", level=Level.SUMMARY, per=Per.JOB))
    if out.tokens_per_s.count == 0 and (tokens := _positive(pairs, "train_tokens_per_second", out)):
        out.observe(Observation(TOKENS_PER_S, tokens, "tokens/s", per=Per.CARD))


def _hugging_face(line: str, out: LogSummary) -> bool:
    at = line.find("{'")
    if at == -1:
        return False
    pairs = dict(_DICT_PAIR.findall(line, at)[:MAX_PAIRS])
    if not pairs:
        return False
    if "loss" in pairs:
        loss(None, pairs["loss"], out)
    _evaluation(pairs, out, _epoch(pairs.get("epoch"), out))
    _run_totals(pairs, out)
    return True


def _paddlenlp(line: str, out: LogSummary) -> bool:
    pairs = dict(_PADDLE_PAIR.findall(line)[:MAX_PAIRS])
    own = ("global_step", "train_runtime")
    if not any(k in pairs for k in own) and not any(k.startswith("eval_") for k in pairs):
        return False
    step_text = pairs.get("global_step")
    step = pass_number(step_text, out) if step_text is not None and step_text.isdigit() else None
    if "loss" in pairs:
        loss(step, pairs["loss"], out)
    if (samples := _positive(pairs, "interval_samples_per_second", out)) is not None:
        out.observe(
            Observation(THROUGHPUT, samples, "samples/s", level=Level.ITERATION, per=Per.JOB)
        )
    if (tokens := _positive(pairs, "interval_tokens_per_second_per_device", out)) is not None:
        out.observe(Observation(TOKENS_PER_S, tokens, "tokens/s", per=Per.CARD))
    if (tflops := _positive(pairs, "interval_hardware_tflops_per_device", out)) is not None:
        out.observe(Observation(TFLOPS_PER_GPU, tflops, "TFLOP/s", per=Per.CARD))
    if (steps := _positive(pairs, "interval_steps_per_second", out)) is not None:
        out.observe(Observation(STEP_TIME_S, 1.0 / steps, "s", per=Per.JOB))
    if (gib := _positive(pairs, "max_memory_allocated", out)) is not None:
        out.observe(Observation(GPU_MEMORY, gib, "GiB", kind="max allocated"))
    _evaluation(pairs, out, None)
    _run_totals(pairs, out)
    return True


_TABLE_KEYS = frozenset(
    {"eval_accuracy", "eval_loss", "train_samples_per_second", "train_tokens_per_second"}
)


def _table_row(line: str, out: LogSummary) -> bool:
    m = _TABLE_ROW.search(line)
    if m is None or m.group(1) not in _TABLE_KEYS:
        return False
    pairs = {m.group(1): m.group(2)}
    if m.group(1) == "train_samples_per_second" and Level.SUMMARY in out.throughput:
        return True  # the table repeats the run's end line, read (and checked) before
    _evaluation(pairs, out, None)
    _run_totals(pairs, out)
    return True


_NEEDLES = (b"{'loss': ", b"_per_second", b"eval_accuracy", b"'eval_loss'")
HUGGING_FACE = Reader("huggingface", _NEEDLES, _hugging_face)
PADDLENLP = Reader("paddlenlp", (b"_per_second", b"eval_accuracy", b"eval_loss: "), _paddlenlp)
LOG_METRICS = Reader("trainer_log_metrics", (b"_per_second", b"eval_accuracy"), _table_row)
