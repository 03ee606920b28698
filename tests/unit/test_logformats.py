"""Each format of docs/architecture.md, from its verbatim lines."""

import io
import json

import pytest

from distkpi.domain.logs.logformats import parse_line, parse_log
from distkpi.domain.logs.logsummary import Level, LogSummary


def parse(*lines: str) -> LogSummary:
    return parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()))


def mllog(key: str, value: object, time_ms: int = 0, **metadata: object) -> str:
    record = {"key": key, "value": value, "time_ms": time_ms, "metadata": metadata}
    return ":::MLLOG " + json.dumps(record)


def test_paddle_pass_line_gives_pass_throughput_and_test_accuracy() -> None:
    out = parse(
        "Pass = 1, Training performance = 240.092875 imgs/s, "
        "Train accuracy = 0.099440, Test accuracy = 0.100400"
    )
    assert out.best_throughput() == (pytest.approx(240.092875), Level.PASS)
    assert out.accuracy_by_pass == {1: pytest.approx(0.1004)}


def test_paddle_iteration_line_is_iteration_level() -> None:
    out = parse("Pass = 0, Iters = 240, Loss = 2.1, Accuracy = 0.3, Speed = 120.50 img/s")
    assert out.best_throughput() == (pytest.approx(120.5), Level.ITERATION)
    assert out.last_accuracy is None  # training accuracy is not test accuracy


def test_paddle_total_examples_line_with_the_sed_typo() -> None:
    out = parse("Total examples: 5120, total time: 42.10000, 121.61520 examples/sed")
    assert out.best_throughput() == (pytest.approx(121.6152), Level.SUMMARY)


def test_paddle_total_examples_line_spelled_right() -> None:
    out = parse("Total examples: 5120, total time: 42.10000, 121.61520 examples/sec")
    assert out.best_throughput() == (pytest.approx(121.6152), Level.SUMMARY)


def test_paddle_test_accuracy_line() -> None:
    out = parse("Pass: 3, Test Accuracy: 0.712000")
    assert out.accuracy_at(3) == pytest.approx(0.712)


def test_ce_kpis_lines() -> None:
    out = parse("kpis\ttrain_speed\t118.5", "kpis\ttest_acc_4passes\t0.61", "kpis\ttrain_cost\t0.3")
    assert out.best_throughput() == (pytest.approx(118.5), Level.SUMMARY)
    assert out.accuracy_by_pass == {4: pytest.approx(0.61)}


def test_metrics_data_line() -> None:
    out = parse(
        "**metrics_data: pass = 4, train_speed = 118.2, acc_4passes = 0.61, converge_speed = 812.0"
    )
    assert out.best_throughput() == (pytest.approx(118.2), Level.PASS)
    assert out.accuracy_by_pass == {4: pytest.approx(0.61)}
    assert out.converge_speed_s == pytest.approx(812.0)


def test_horovod_lines() -> None:
    out = parse("Img/sec per GPU: 108.2 +-1.2", "Total img/sec on 4 GPU(s): 432.8 +-4.9")
    assert out.explicit_total == pytest.approx(432.8)
    assert out.per_gpu_throughput.mean == pytest.approx(108.2)


def test_tf_cnn_benchmarks_lines() -> None:
    out = parse(
        "10\timages/sec: 130.1 +/- 0.0 (jitter = 0.0)\t7.836",
        "20\timages/sec: 139.0 +/- 0.3 (jitter = 1.1)\t7.800",
        "total images/sec: 138.95",
    )
    assert out.best_throughput() == (pytest.approx(138.95), Level.SUMMARY)
    assert out.throughput[Level.ITERATION].mean == pytest.approx(139.0)  # warm-up dropped


def test_mllog_with_any_prefix_and_all_keys() -> None:
    out = parse(
        "0: [1,0]<stdout>:" + mllog("run_start", None, 1_000_000),
        mllog("global_batch_size", 256, 1_000_001),
        "I1130 12:00:00 trainer.py:77] " + mllog("tracked_stats", {"throughput": 90.0}, 1_060_000),
        mllog("tracked_stats", {"throughput": 100.0}, 1_120_000),
        mllog("eval_accuracy", 0.55, 1_120_500, epoch_num=1),
        mllog("eval_accuracy", 0.65, 1_180_500, epoch_num=2),
        mllog("run_stop", None, 1_190_000, status="success"),
    )
    assert out.run_start_s == 1000.0
    assert out.best_throughput() == (100.0, Level.PASS)
    assert out.accuracy_by_pass == {1: 0.55, 2: 0.65}
    assert out.first_time_reaching(0.6) == pytest.approx(1180.5)
    assert out.problems == []  # global_batch_size and run_stop are read and have no KPI


def test_broken_mllog_json_is_a_problem_not_a_crash() -> None:
    out = parse(':::MLLOG {"key": "run_start", "time_ms": 12', ":::MLLOG [1, 2]")
    assert out.problems == ["unreadable :::MLLOG line skipped"]


def test_unknown_lines_are_skipped() -> None:
    out = LogSummary()
    assert not parse_line("I1130 12:00:00 executor.cc:132] Pass the salt", out)
    assert not parse_line("Img/sec of nothing", out)
    assert out == LogSummary()


@pytest.mark.parametrize(
    "line",
    [
        "Pass = 1, Training performance = nan imgs/s",
        "Pass = 1, Training performance = -5 imgs/s",
        mllog("tracked_stats", {"throughput": "fast"}),
        mllog("tracked_stats", {"throughput": True}),
        mllog("eval_accuracy", None, epoch_num=1),
    ],
)
def test_nonsense_numbers_are_not_reports(line: str) -> None:
    out = parse(line)
    assert out.best_throughput() is None
    assert out.last_accuracy is None


def test_warmup_report_is_dropped_when_two_or_more() -> None:
    out = parse(
        "Pass = 0, Training performance = 50 imgs/s",
        "Pass = 1, Training performance = 100 imgs/s",
        "Pass = 2, Training performance = 110 imgs/s",
    )
    assert out.best_throughput() == (pytest.approx(105.0), Level.PASS)
    assert out.samples() == [100.0, 110.0]


def test_a_single_report_is_kept() -> None:
    assert parse("Pass = 0, Training performance = 50 imgs/s").best_throughput() == (
        50.0,
        Level.PASS,
    )


def test_pass_level_wins_over_iterations_in_the_same_log() -> None:
    out = parse(
        "Pass = 0, Iters = 100, Loss = 2.1, Accuracy = 0.3, Speed = 500.00 img/s",
        "Pass = 0, Iters = 200, Loss = 2.0, Accuracy = 0.3, Speed = 500.00 img/s",
        "Pass = 0, Training performance = 90 imgs/s",
        "Pass = 1, Training performance = 100 imgs/s",
    )
    assert out.best_throughput() == (100.0, Level.PASS)


def test_accuracy_for_a_pass_falls_back_to_the_last() -> None:
    out = parse("Pass: 0, Test Accuracy: 0.5", "Pass: 1, Test Accuracy: 0.6")
    assert out.accuracy_at(1) == pytest.approx(0.6)
    assert out.accuracy_at(7) == pytest.approx(0.6)
