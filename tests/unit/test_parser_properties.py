"""Property-based tests of the parsers and the run-folder reader (hypothesis): whatever the
bytes, nothing raises but the documented RunFolderError for an unusable run.json, every KPI
can be stored, and every line is parsed in time linear in its length."""

from __future__ import annotations

import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeSerializer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distkpi.adapters.dynamo import to_dynamo
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.domain.logs.gpumemory import parse_gpu_memory
from distkpi.domain.logs.logformats import parse_line, parse_log
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.exceptions import RunFolderError
from distkpi_cli.localfs import LocalRunSource

PROPERTY = settings(max_examples=150, deadline=None)

# Lines of every format the parsers know, with a slot where a number goes.
TEMPLATES = (
    "Pass = {}, Training performance = {} imgs/s, Train accuracy = {}, Test accuracy = {}",
    "Pass = {}, Iters = {}, Loss = {}, Accuracy = {}, Speed = {} img/s",
    "Total examples: {}, total time: {}, {} examples/sed",
    "Pass: {}, Test Accuracy: {}",
    "kpis\t{}\t{}",
    "kpis\ttest_acc_{}passes\t{}",
    "**metrics_data: pass = {}, train_speed = {}, acc_{}passes = {}, converge_speed = {}",
    "Img/sec per GPU: {} +-{}",
    "Total img/sec on {} GPU(s): {} +-{}",
    "total images/sec: {}",
    "{}  images/sec: {}",
    ':::MLLOG {{"key": "eval_accuracy", "value": {}, "time_ms": {}, '
    '"metadata": {{"epoch_num": {}}}}}',
    ':::MLLOG {{"key": "tracked_stats", "value": {{"throughput": {}}}, "time_ms": {}}}',
    ':::MLLOG {{"key": "run_start", "value": null, "time_ms": {}}}',
    ':::MLLOG {{"key": "global_batch_size", "value": {}}}',
    ':::MLLOG {{"key": "eval_accuracy", "value": {{"BBOX": {}, "SEGM": {}}}, "time_ms": {}}}',
    ':::MLLOG {{"key": "train_samples", "value": {}}}',
    ':::MLLOG {{"key": "epoch_stop", "time_ms": {}, "metadata": {{"epoch_num": {}}}}}',
    ':::MLLOG {{"key": "run_stop", "time_ms": {}, "metadata": {{"status": "{}"}}}}',
    ':::MLL {} eval_accuracy: {{"value": {}, "metadata": {{"epoch_num": {}}}}}',
    "[Train][Epoch 1/120][Iter: 0/5005]top1: {}, batch_cost: {}s, ips: {} images/sec",
    "DLL 2020-12-18 11:06:13.123456 - () train_throughput : {} images/s",
    "DLL 2020-12-18 11:06:13.123456 - Summary: train.loss : {}  train.total_ips : {} img/s",
    'DLLL {{"timestamp": "{}", "step": [], "data": {{"throughput_train": {}}}}}',
    "{{'e2e_time': {}, 'training_sequences_per_second': {}, 'final_loss': {}}}",
    "Epoch[{}] Batch [{}-{}]\tSpeed: {} samples/sec\taccuracy={}",
    "Epoch[{}] Validation-accuracy={}",
    "Pass: {}, Loss: {} , Test Accuracy: {}",
    ':::MLLOG {{"key": "throughput", "value": {}, "time_ms": {}}}',
    ':::MLPv0.5.0 resnet {} (x.py:1) eval_accuracy: {{"epoch": {}, "value": {}}}',
    "iteration {}/ {} | elapsed time per iteration (ms): {} | throughput per GPU (TFLOP/s/GPU): {}"
    " | global batch size: {} | lm loss: {} | number of nan iterations: {} |",
    "[Rank 0] (after {} iterations) memory (MB) | allocated: {} | max allocated: {}",
    "[rank0]:step: {}  loss: {}  memory: {}GiB({}%)  tps: {}  tflops: {}  mfu: {}%",
    "completed step: {}, seconds: {}, TFLOP/s/device: {}, Tokens/s/device: {}, loss: {}",
    "epoch=0/micro_step={}/global_step={}, RunningAvgSamplesPerSec={}, CurrSamplesPerSec={}, "
    "MemAllocated={}GB, MaxMemAllocated={}GB",
    "{{'loss': {}, 'learning_rate': {}, 'epoch': {}}}",
    "{{'train_runtime': {}, 'train_samples_per_second': {}, 'epoch': {}}}",
    "loss: {}, global_step: {}, max_memory_allocated: {}, interval_samples_per_second: {}, "
    "interval_tokens_per_second_per_device: {}, interval_steps_per_second: {}",
    "  eval_accuracy = {}",
    "ppl: {}, loss: {}",
    "global step {}, epoch: 0, batch: 0, loss: {}, ips_total: {} tokens/s, ips: {} tokens/s",
    ':::MLLOG {{"key": "eval_accuracy", "value": {}, "time_ms": {}, '
    '"metadata": {{"step_num": {}, "metric": "FID"}}}}',
    ':::MLLOG {{"key": "tracked_stats", "value": {{"train_step_time": {}}}, "time_ms": {}}}',
    "DLL 2022-05-19 18:27:50.403645 - epoch {} | avg train utts/s  {} | took {} s",
    "DLL 2022-05-19 19:05:08.574990 -  | avg train utts/s  {}",
    "[Eval][Epoch {}][Avg]CELoss: {}, loss: {}, top1: {}, top5: {}",
    'DLLL {{"step": [{}], "data": {{"val.top1": {}, "train.total_ips": {}}}}}',
)

NUMBER_TEXT = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=300, max_value=6000).map(lambda n: "9" * n),
    st.text(alphabet="0123456789.-+eE x,=", max_size=40),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1", "0", "1e-400"]),
)


@st.composite
def format_lines(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(TEMPLATES))
    slots = template.count("{}")
    return template.format(*(draw(NUMBER_TEXT) for _ in range(slots)))


LINES = st.one_of(format_lines(), st.text(max_size=200))
LOG_BYTES = st.one_of(
    st.lists(LINES, max_size=30).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")),
    st.binary(max_size=2000),
)


def storable(value: Any) -> None:
    TypeSerializer().serialize(to_dynamo(value))


@PROPERTY
@given(LOG_BYTES)
def test_no_log_crashes_the_parser_and_its_numbers_can_be_stored(data: bytes) -> None:
    summary = parse_log(io.BytesIO(data))
    storable(
        {
            "throughput": summary.best_throughput()[0] if summary.best_throughput() else None,
            "samples": summary.samples(),
            "accuracy": summary.last_accuracy,
            "by_pass": {str(k): v for k, v in summary.accuracy_by_pass.items()},
            "converge": summary.converge_speed_s,
            "start": summary.run_start_s,
        }
    )


@PROPERTY
@given(st.lists(st.one_of(NUMBER_TEXT, st.text(max_size=60)), max_size=20))
def test_no_gpu_memory_file_crashes_its_parser(lines: list[str]) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    storable({"peak": parse_gpu_memory(io.BytesIO(data)).peak_mib})


# -- the run-folder reader -------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
RUN = {
    "schema": 1,
    "run_id": "r",
    "repo": "o/r",
    "sha": "a" * 40,
    "ref": "refs/heads/develop",
    "model": "m",
    "target_accuracy": 0.5,
    "accuracy_pass": 1,
    "accuracy_tolerance": 0.01,
    "configs": [
        {
            "name": "c",
            "trainers": 2,
            "gpus_per_trainer": 1,
            "pservers": 1,
            "batch_size": 8,
            "nodes": 3,
        }
    ],
}
FILE_NAMES = st.one_of(
    st.sampled_from(["trainer-0.log", "logs/t.log", "../run.json", "/etc/passwd", "a\\b"]),
    st.text(min_size=1, max_size=300),
)


@st.composite
def manifests(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(JSON)
    files = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "path": FILE_NAMES,
                    "role": st.sampled_from(["trainer", "pserver", "chief"]),
                    "rank": st.integers(min_value=-1, max_value=10**40),
                    "kind": st.sampled_from(["log", "gpu_memory", "other"]),
                }
            ),
            max_size=5,
        )
    )
    return {
        "schema": 1,
        "node": draw(st.integers(min_value=-1, max_value=4)),
        "exit_code": draw(st.integers(min_value=-(10**40), max_value=10**40)),
        "started_at": "2026-11-30T00:00:00Z",
        "finished_at": draw(st.sampled_from(["2026-11-30T00:10:00Z", "never", ""])),
        "files": files,
        "peak_host_rss_mib": draw(st.floats()),
    }


MANIFEST_NAMES = st.one_of(
    st.integers(min_value=0, max_value=4).map(lambda i: f"node-{i}.json"),
    st.sampled_from(["node-01.json", "node-00.json", f"node-{'9' * 60}.json", "node-.json"]),
)


@settings(PROPERTY, suppress_health_check=[HealthCheck.too_slow])
@given(
    run=st.one_of(st.just(RUN), JSON),
    nodes=st.dictionaries(MANIFEST_NAMES, manifests(), max_size=4),
    logs=st.dictionaries(st.sampled_from(["trainer-0.log", "logs/t.log"]), LOG_BYTES, max_size=2),
)
def test_the_run_folder_reader_raises_only_for_an_unusable_run_json(
    run: Any, nodes: dict[str, Any], logs: dict[str, bytes]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "run.json").write_text(json.dumps(run))
        config = root / "c"
        (config / "logs").mkdir(parents=True)
        for name, manifest in nodes.items():
            (config / name).write_text(json.dumps(manifest))
        for name, data in logs.items():
            (config / name).write_bytes(data)
        try:
            kpis = compute_run_kpis(LocalRunSource(root))
        except RunFolderError:
            assert run is not RUN
            return
        for config_kpis in kpis.configs:
            storable(config_kpis.to_record())


# -- time linear in the line's length --------------------------------------------------------

LINE_BYTES = 16 * 1024
HEADS = (
    "Pass = 1, Training performance = ",
    "Pass = 1, Iters = 1, Speed = ",
    "Total examples: 1, total time: ",
    "Pass: 1, Test Accuracy: ",
    "kpis\tspeed\t",
    "**metrics_data: ",
    "Img/sec per GPU: ",
    "Total img/sec on 8 GPU(s): ",
    "total images/sec: ",
    ":::MLLOG ",
    ":::MLL 1 run_start: ",
    "ips: ",
    "[Train] ips: 1",
    "DLL 2020-12-18 11:06:13.123456 - () ",
    "DLLL ",
    "'training_sequences_per_second': ",
    "Epoch[0] Batch [1-2]\tSpeed: ",
    "Epoch[0] Validation-accuracy=",
    "Pass: 1, Loss: ",
    ":::MLPv0.5.0 resnet 1 (x.py:1) eval_accuracy: ",
    "DLL 2022-05-19 18:27:50.403645 - epoch 1 | ",
    "[Eval][Epoch 1][Avg]",
    "iteration 1/ 2 |",
    "memory (MB) |",
    "step: 1 tps: ",
    "completed step: 1, ",
    "CurrSamplesPerSec=",
    "{'loss': ",
    "global_step: 1, interval_samples_per_second: ",
    "  eval_accuracy = ",
    "ppl: ",
    "[rank0]:",
    "",
)
UNITS = (
    "1",
    "1.",
    "a",
    " ",
    "\t",
    "1e",
    "=1",
    "a=",
    "Pass = 1, Iters = 1,",
    "Speed = 1",
    "Test accuracy = 1x",
    "acc_1",
    "[",
    '{"a":',
    "kpis\t",
    " : 1",
    "ips: 1",
    "1-",
    "Epoch[",
    " | 1",
    "top1: 1",
    " |",
    "a: 1 |",
    "1,",
    "'a': 1, ",
    "a: 1, ",
    "[rank0]:",
    "0: ",
    "\x1b[3",
)


def _seconds_to_parse(line: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        parse_line(line, LogSummary())
        best = min(best, time.perf_counter() - start)
    return best


def _normal_line_of_length(length: int) -> str:
    """Ordinary text that holds a needle, so every parser reads it to its end."""
    words = "Pass the loss to the optimizer and log the step time, then go on training "
    return (words * (length // len(words) + 1))[:length]


@settings(max_examples=60, deadline=None)
@given(head=st.sampled_from(HEADS), unit=st.sampled_from(UNITS), tail=st.sampled_from(["", "x"]))
def test_every_line_is_parsed_in_time_linear_in_its_length(head: str, unit: str, tail: str) -> None:
    hostile = head + unit * ((LINE_BYTES - len(head)) // len(unit)) + tail
    normal = _normal_line_of_length(len(hostile))
    # Measured: at most ~25x (a metrics_data line of 8,000 pairs). A quadratic pattern takes
    # seconds on such a line, thousands of times a normal line.
    ratio = _seconds_to_parse(hostile) / max(_seconds_to_parse(normal), 1e-6)
    assert ratio < 100, f"{head!r} + {unit!r} * n took {ratio:.0f}x a normal line"
