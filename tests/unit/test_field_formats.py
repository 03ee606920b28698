"""The field's log formats, one reader each, from lines the field prints.

Where a line is quoted from the issue that asked for the reader (issue 23), it is the line
as its authors' tools print it: PaddleClas's `ppcls/engine/train/utils.py` log line,
NVIDIA DLLogger's text (`StdOutBackend`) and JSON (`JSONStreamBackend`) backends, NVIDIA
BERT's `run_pretraining.py` final print, MXNet's `callback.Speedometer`, MLPerf's v0.6
`mlperf_compliance` logger and Paddle's `fluid_benchmark.py`. Whole real logs are in
tests/data/real (test_real_logs.py).
"""

import io
import json

import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.logs.logformats import ParseSettings, parse_log
from distkpi.domain.logs.logsummary import Level, LogSummary, Per


def parse(*lines: str, settings: ParseSettings | None = None) -> LogSummary:
    data = io.BytesIO(("\n".join(lines) + "\n").encode())
    return parse_log(data, settings) if settings is not None else parse_log(data)


def mllog(key: str, value: object, time_ms: int = 0, **metadata: object) -> str:
    record = {"key": key, "value": value, "time_ms": time_ms, "metadata": metadata}
    return ":::MLLOG " + json.dumps(record)


PADDLECLAS = (
    "[2021/08/10 10:41:15] root INFO: [Train][Epoch 1/120][Iter: 20/5005]lr: 0.10000, "
    "top1: 0.00123, CELoss: 6.90466, loss: 6.90466, batch_cost: 0.27934s, "
    "reader_cost: 0.03216, ips: 343.96 images/sec, eta: 1 day, 22:35:27"
)


def test_paddleclas_ips_is_per_card_and_per_step() -> None:
    out = parse(PADDLECLAS)
    assert out.best_throughput() == (pytest.approx(343.96), Level.ITERATION)
    assert out.throughput_per() is Per.CARD


def test_the_elapse_variant_quoted_in_the_issue() -> None:
    # issue 23, verbatim: PaddleClas/PaddleNLP/PaddleDetection's older training line
    out = parse("epoch: 0, batch: 10, loss: 6.9 elapse: 0.279s ips: 343.96 images/sec.")
    assert out.best_throughput() == (pytest.approx(343.96), Level.ITERATION)


@pytest.mark.parametrize(
    "line",
    [
        "ips: 127.0.0.1",  # the node list Paddle's launcher prints
        "INFO 2021-08-10 10:40:01 launch_utils.py:561] ips: 127.0.0.1,127.0.0.2",
        "[Eval][Epoch 1][Iter: 0/196]CELoss: 6.8, top1: 0.0039, batch_cost: 0.1s, "
        "ips: 2500.0 images/sec",  # an evaluation's speed, not training's
        "global_step: 10, loss: 9.1, speed: 1.2 step/s, ips: 3.4 steps/s",  # steps, not samples
    ],
)
def test_ips_that_is_no_training_throughput_is_ignored(line: str) -> None:
    assert parse(line).best_throughput() is None


def test_dllogger_text_summary_wins_over_per_step_values() -> None:
    out = parse(
        "DLL 2020-12-18 11:06:13.123456 - (0, 100) train_throughput : 3105.256 images/s",
        "DLL 2020-12-18 11:06:14.123456 - (0, 200) train_throughput : 3205.256 images/s",
        "DLL 2020-12-18 11:09:01.000000 - Summary: train.loss : 7.09  "
        "train.total_ips : 2826.78 img/s",
    )
    assert out.best_throughput() == (pytest.approx(2826.78), Level.SUMMARY)
    assert out.throughput_per() is Per.JOB


def test_dllogger_text_empty_step_is_the_summary() -> None:
    out = parse("DLL 2020-12-18 11:06:13.123456 - () train_throughput : 3105.256 images/s")
    assert out.best_throughput() == (pytest.approx(3105.256), Level.SUMMARY)


def test_dllogger_compute_only_and_evaluation_rates_are_not_training_throughput() -> None:
    out = parse(
        "DLL 2020-12-18 11:09:01.000000 - Summary: train.compute_ips : 3000.0 img/s  "
        "val.total_ips : 9000.0 img/s  train.total_ips : 2826.78 img/s"
    )
    assert out.best_throughput() == (pytest.approx(2826.78), Level.SUMMARY)


def test_dllogger_json_backend() -> None:
    step = {"timestamp": "1608289573.1", "elapsedtime": 1.0, "type": "LOG", "step": [0, 10]}
    out = parse(
        "DLLL " + json.dumps({**step, "data": {"throughput_train": 1000.0}}),
        "DLLL " + json.dumps({**step, "data": {"throughput_train": 1100.0}}),
        "DLLL " + json.dumps({**step, "step": [], "data": {"throughput_train": 1050.5}}),
    )
    assert out.best_throughput() == (pytest.approx(1050.5), Level.SUMMARY)
    assert out.throughput_per() is Per.JOB


def test_an_unreadable_dllll_line_is_a_problem() -> None:
    assert parse('DLLL {"step": [').problems == ["unreadable DLLL line skipped"]


def test_nvidia_bert_final_dict_line() -> None:
    out = parse(
        "{'e2e_time': 1312.5, 'training_sequences_per_second': 16347.1, "
        "'final_loss': 1.4, 'raw_train_time': 1250.0}"
    )
    assert out.best_throughput() == (pytest.approx(16347.1), Level.SUMMARY)
    assert out.throughput_per() is Per.JOB


def test_mxnet_speedometer_is_per_process() -> None:
    out = parse(
        "INFO:root:Epoch[0] Batch [0-20]\tSpeed: 18202.50 samples/sec\taccuracy=0.001",
        "INFO:root:Epoch[0] Batch [20-40]\tSpeed: 21202.50 samples/sec\taccuracy=0.002",
        "INFO:root:Epoch[0] Batch [40]\tSpeed: 21302.50 samples/sec\taccuracy=0.002",
        "INFO:root:Epoch[0] Validation-accuracy=0.062500",
    )
    assert out.best_throughput() == (pytest.approx(21252.5), Level.ITERATION)
    assert out.throughput_per() is Per.PROCESS
    assert out.accuracy_by_pass == {0: pytest.approx(0.0625)}


def test_mlperf_v06_mll_lines_with_unix_seconds() -> None:
    out = parse(
        ':::MLL 1560881731.835 run_start: {"value": null, "metadata": {"file": "train.py", '
        '"lineno": 66}}',
        ':::MLL 1560882731.835 eval_accuracy: {"value": 0.759, "metadata": {"epoch_num": 61}}',
        ':::MLL 1560882732.000 run_stop: {"value": null, "metadata": {"status": "success"}}',
    )
    assert out.run_start_s == pytest.approx(1560881731.835)
    assert out.accuracy_by_pass == {61: pytest.approx(0.759)}
    assert out.first_time_reaching(0.759) == pytest.approx(1560882731.835)
    assert out.crash is None and not out.aborted


def test_fluid_benchmark_pass_line_with_its_loss() -> None:
    out = parse("Pass: 0, Loss: 5.324727 , Test Accuracy: 0.014486")
    assert out.accuracy_by_pass == {0: pytest.approx(0.014486)}


def test_mllog_aborted_run_stop_is_no_crash() -> None:
    out = parse(mllog("run_stop", None, 5_000, status="aborted"))
    assert out.aborted and out.crash is None


def test_mllog_run_stop_with_another_status_stays_a_crash() -> None:
    assert parse(mllog("run_stop", None, 5_000, status="failure")).crash is not None


def test_mllog_eval_accuracy_object_keeps_its_parts() -> None:
    out = parse(
        mllog("eval_accuracy", {"BBOX": 0.36, "SEGM": 0.33}, 1_000, epoch_num=1),
        mllog("eval_accuracy", {"BBOX": 0.378, "SEGM": 0.3395}, 2_000, epoch_num=2),
    )
    assert out.last_accuracy == {"BBOX": 0.378, "SEGM": 0.3395}
    assert out.first_time_reaching({"BBOX": 0.377, "SEGM": 0.339}) == 2.0
    assert out.first_time_reaching({"BBOX": 0.377, "SEGM": 0.34}) is None


def test_an_object_reaches_a_target_only_when_every_named_part_does() -> None:
    out = parse(
        mllog("eval_accuracy", {"BBOX": 0.38, "SEGM": 0.30}, 1_000),
        mllog("eval_accuracy", {"BBOX": 0.30, "SEGM": 0.34}, 2_000),
        mllog("eval_accuracy", {"BBOX": 0.377, "SEGM": 0.339}, 3_000),
    )
    # neither earlier evaluation reaches both; the third is kept though no part is a record
    assert out.first_time_reaching({"BBOX": 0.377, "SEGM": 0.339}) == 3.0


def test_lower_is_better_reaches_at_or_below_the_target() -> None:
    lower = ParseSettings(direction=Direction.LOWER)
    lines = [mllog("eval_accuracy", v, t) for v, t in ((0.30, 25_000), (0.07, 500_000))]
    lines.append(mllog("eval_accuracy", 0.058, 1_000_000))
    assert parse(*lines, settings=lower).first_time_reaching(0.058) == 1000.0
    # read as higher-is-better, the first evaluation is already "above" the target
    assert parse(*lines).first_time_reaching(0.058) == 25.0


def test_mllog_epochs_and_train_samples_are_kept_for_a_throughput() -> None:
    out = parse(
        mllog("train_samples", 1281167),
        mllog("epoch_start", None, 0, epoch_num=1),
        mllog("epoch_stop", None, 20_000, epoch_num=1),
        mllog("epoch_start", None, 20_000, epoch_num=2),
        mllog("epoch_stop", None, 30_000, epoch_num=2),
        mllog("epoch_start", None, 30_000, epoch_num=3),
        mllog("epoch_stop", None, 40_000, epoch_num=3),
    )
    assert out.best_throughput() is None  # the log states no throughput of its own
    rate, samples = out.epoch_throughput() or (None, [])
    assert rate == pytest.approx(1281167 * 2 / 20.0)  # the first epoch left out
    assert samples == [pytest.approx(128116.7), pytest.approx(128116.7)]


@pytest.mark.parametrize(
    ("count", "dropped"),
    [(1, 0), (2, 1), (19, 1), (20, 1), (35, 2), (40, 2), (49, 3), (100, 5), (343, 18), (1000, 50)],
)
def test_warmup_is_the_first_five_percent_rounded_up_and_at_least_one(
    count: int, dropped: int
) -> None:
    lines = [f"Pass = 0, Iters = {i}, Speed = {1000 + i} img/s" for i in range(count)]
    out = parse(*lines)
    assert len(out.samples()) == count - dropped
    expected = sum(1000 + i for i in range(dropped, count)) / (count - dropped)
    assert out.best_throughput() == (pytest.approx(expected), Level.ITERATION)


def test_a_suite_sets_the_warmup() -> None:
    lines = [f"Pass = 0, Iters = {i}, Speed = {v} img/s" for i, v in enumerate([1, 2, 3, 10])]
    assert parse(*lines, settings=ParseSettings(warmup_reports=3)).samples() == [10.0]
    assert parse(*lines, settings=ParseSettings(warmup_reports=0)).samples() == [1, 2, 3, 10]
    # never every report: the last is kept
    assert parse(*lines, settings=ParseSettings(warmup_reports=9)).samples() == [10.0]
