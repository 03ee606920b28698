"""PaddlePaddle's logs: the CE and book scripts (`Pass = 0, Training performance = ...`,
`kpis\t...`, `**metrics_data: ...`), fluid_benchmark (`Pass: 0, Loss: ..., Test Accuracy:
...`, `Total examples: ...`), the suites' `ips: 343.96 images/sec` step lines (PaddleClas,
PaddleSeg, PaddleDetection, PaddleNLP) and PaddleClas's evaluations."""

from __future__ import annotations

import re

from distkpi.domain.logs.logsummary import (
    TEST_ACCURACY,
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
    positive_throughput,
)

_PASS_PERF = re.compile(
    rf"Pass = (\d++), Training performance = {NUM} imgs?/s"
    rf"(?:.*?Test accuracy = {NUM})?"
)
_PASS_ITER_HEAD = re.compile(r"Pass = \d++, Iters = \d++,")
_ITER_SPEED = re.compile(rf"Speed = {NUM} (?:imgs?|samples|examples)/s")
_TOTAL_EXAMPLES = re.compile(rf"Total examples: \d++, total time: {NUM}, {NUM} examples/se[cd]")
# the loss may be NaN (`Loss: nan`) while the evaluation is still a number worth reading
_PASS_TEST_ACC = re.compile(rf"Pass: (\d++),(?: Loss: {LOSS} ?+,)? Test Accuracy: {NUM}")
_CE_KPI = re.compile(rf"\s*+kpis\t([^\t]++)\t{NUM}\s*+$")
_METRICS = re.compile(r"\*\*metrics_data:(.*)")
_METRIC_PAIR = re.compile(rf"(?<!\w)(\w++)\s*+=\s*+{NUM}")
_ACC_N_PASSES = re.compile(r"acc_(\d++)passes")
# `ips: 343.96 images/sec` per card; `ips: 127.0.0.1` (the node list) has no unit after its
# number, so it is never a report; `ips: 4741.68 tokens/s` is a token rate, never samples
_PADDLE_IPS = re.compile(rf"(?<![\w.])ips: {NUM} ([A-Za-z]++)/s(?:ec)?+(?![\w])")
_NOT_SAMPLES = frozenset({"step", "steps", "batch", "batches", "it", "its", "iter", "iters"})
_TOKENS = frozenset({"token", "tokens", "tok", "toks", "words", "word"})
_GLOBAL_STEP = re.compile(r"global step (\d++),")
_LOSS_AFTER = re.compile(rf"\bloss: {LOSS}")
_PADDLECLAS_EVAL = re.compile(rf"\[Eval\]\[Epoch (\d++)\]\[Avg\].*?\btop1: {NUM}")


def _pass(line: str, out: LogSummary) -> bool:
    if m := _PASS_PERF.search(line):
        positive_throughput(m.group(2), Level.PASS, out)
        if m.group(3) is not None and (acc := finite(m.group(3), out)) is not None:
            out.observe(Observation(TEST_ACCURACY, acc, "", pass_number(m.group(1), out)))
        return True
    if _iteration(line, out):
        return True
    if m := _PASS_TEST_ACC.search(line):
        if m.group(2) is not None:
            loss(None, m.group(2), out)
        if (acc := finite(m.group(3), out)) is not None:
            out.observe(Observation(TEST_ACCURACY, acc, "", pass_number(m.group(1), out)))
        return True
    return False


def _iteration(line: str, out: LogSummary) -> bool:
    """`Pass = N, Iters = M, ... Speed = X img/s`: the speed is looked for once, after the
    first head, rather than by one pattern that would rescan the line from every head."""
    head = _PASS_ITER_HEAD.search(line)
    if head is None:
        return False
    speed = _ITER_SPEED.search(line, head.end())
    if speed is None:
        return False
    positive_throughput(speed.group(1), Level.ITERATION, out)
    return True


def _summary(line: str, out: LogSummary) -> bool:
    if m := _TOTAL_EXAMPLES.search(line):
        positive_throughput(m.group(2), Level.SUMMARY, out)
        return True
    return False


def _ce_kpi(line: str, out: LogSummary) -> bool:
    m = _CE_KPI.match(line)
    if not m:
        return False
    name, value = m.group(1).lower(), finite(m.group(2), out)
    if value is None:
        return True
    if ("speed" in name and "converge" not in name) or "throughput" in name:
        if value > 0:
            out.observe(Observation(THROUGHPUT, value, "samples/s", level=Level.SUMMARY))
    elif "converge" in name:
        out.converge_speed_s = value
    elif "test_acc" in name:
        passes = _ACC_N_PASSES.search(name)
        out.observe(
            Observation(
                TEST_ACCURACY, value, "", pass_number(passes.group(1), out) if passes else None
            )
        )
    return True


def _metrics_data(line: str, out: LogSummary) -> bool:
    m = _METRICS.search(line)
    if not m:
        return False
    pairs = {k: v for k, v in _METRIC_PAIR.findall(m.group(1))}
    if "train_speed" in pairs:
        positive_throughput(pairs["train_speed"], Level.PASS, out)
    for key, text in pairs.items():
        passes = _ACC_N_PASSES.fullmatch(key)
        if passes and (acc := finite(text, out)) is not None:
            out.observe(Observation(TEST_ACCURACY, acc, "", pass_number(passes.group(1), out)))
    if "converge_speed" in pairs:
        out.converge_speed_s = finite(pairs["converge_speed"], out)
    return True


def _ips(line: str, out: LogSummary) -> bool:
    """Training steps: `... ips: 343.96 images/sec`, per card; a token rate (`ips: 4741.68
    tokens/s`, PaddleNLP's language models) is tokens/s per card."""
    m = _PADDLE_IPS.search(line)
    if m is None:
        return False
    unit = m.group(2).lower()
    if unit in _NOT_SAMPLES or "[Eval]" in line or "[EVAL]" in line:
        return True
    if unit in _TOKENS:
        step = _GLOBAL_STEP.search(line)
        # without a step it is the run's own total (`llm/run_pretrain.py`'s effective
        # tokens/s), taken only when the log states no step's rate
        if (step is not None or out.tokens_per_s.count == 0) and (
            rate := positive(m.group(1), out)
        ) is not None:
            out.observe(Observation(TOKENS_PER_S, rate, "tokens/s", per=Per.CARD))
        if step is not None and (value := _LOSS_AFTER.search(line, step.end())):
            loss(pass_number(step.group(1), out), value.group(1), out)
        return True
    positive_throughput(m.group(1), Level.ITERATION, out, Per.CARD)
    return True


def _paddleclas_eval(line: str, out: LogSummary) -> bool:
    """PaddleClas's epoch evaluation: `[Eval][Epoch 400][Avg]CELoss: ..., top1: 0.36560`."""
    m = _PADDLECLAS_EVAL.search(line)
    if m is None:
        return False
    if (acc := finite(m.group(2), out)) is not None:
        out.observe(Observation(TEST_ACCURACY, acc, "", pass_number(m.group(1), out)))
    return True


METRICS_DATA = Reader("paddle_ce_metrics", (b"metrics_data",), _metrics_data)
CE_KPI = Reader("paddle_ce_kpis", (b"kpis\t",), _ce_kpi)
PASS = Reader("paddle_pass", (b"Pass",), _pass)
SUMMARY = Reader("paddle_fluid_benchmark", (b"examples/se",), _summary)
PADDLECLAS_EVAL = Reader("paddleclas_eval", (b"[Avg]",), _paddleclas_eval)
IPS = Reader("paddle_ips", (b"ips: ",), _ips)
