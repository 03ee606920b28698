"""Each KPI rule of docs/architecture.md, on run folders written like real jobs write them."""

import json

import pytest

from distkpi.domain.kpis.engine import RunKpis
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi_cli.localfs import LocalRunSource
from tests.conftest import RunBuilder, mllog, pass_log

GPU_CSV = "timestamp, index, memory.used [MiB]\n2026/11/30 00:00:00, 0, 900 MiB\n0, 1, 1000 MiB\n"


def kpis(builder: RunBuilder, **kw: float) -> RunKpis:
    return compute_run_kpis(LocalRunSource(builder.root), **kw)  # type: ignore[arg-type]


def test_throughput_speedup_efficiency_and_accuracy_delta(run_builder: RunBuilder) -> None:
    # Given a 1-GPU base and a 2-trainer x 4-GPU config, pass-level reports with warm-up
    b = run_builder.config("1x1").config("2x4", trainers=2, gpus=4)
    b.trainer("1x1", 0, pass_log(50, 100, 100, accuracies=[0.3, 0.5, 0.7]), GPU_CSV)
    b.trainer("2x4", 0, pass_log(10, 300, 300, accuracies=[0.3, 0.5, 0.7005]))
    b.trainer("2x4", 1, pass_log(10, 290, 310))
    # When
    run = kpis(b)
    # Then: warm-up dropped, trainers summed, base is the 1-GPU config
    base, big = run.config("1x1"), run.config("2x4")
    assert run.base_config == "1x1"
    assert base.throughput == 100 and base.speedup == 1.0 and base.efficiency == 1.0
    assert big.throughput == 600
    assert big.speedup == pytest.approx(6.0)
    assert big.efficiency == pytest.approx(0.75)
    assert big.test_accuracy == pytest.approx(0.7005)
    assert big.accuracy_delta == pytest.approx(0.0005)
    assert base.trainer_gpu_memory_mib == 1000
    assert base.pserver_gpu_memory_mib is None
    assert all(c.status == "ok" for c in run.configs)


def test_explicit_total_is_the_configs_throughput(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x4", gpus=4)
    b.trainer("1x4", 0, "Img/sec per GPU: 100.0 +-1\nTotal img/sec on 4 GPU(s): 390.5 +-4\n")
    assert kpis(b).config("1x4").throughput == 390.5


def test_per_gpu_report_alone_counts_each_gpu_of_the_trainer(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x4", gpus=4)
    b.trainer("1x4", 0, "Img/sec per GPU: 100.0 +-1\n")
    assert kpis(b).config("1x4").throughput == 400.0


def test_a_node_that_exited_non_zero_fails_the_config(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1").config("2x1", trainers=2)
    b.trainer("1x1", 0, pass_log(100, 100))
    b.trainer("2x1", 0, pass_log(100, 100))
    b.node("2x1", 1, [("trainer-1.log", "trainer", 1, "log", pass_log(100, 100))], exit_code=1)
    cfg = kpis(b).config("2x1")
    assert cfg.status == "failed"
    assert cfg.throughput is None and cfg.speedup is None and cfg.efficiency is None
    assert "node 1 exited with code 1" in cfg.problems


CRASHES = [
    (
        'Traceback (most recent call last):\n  File "train.py", line 9\nRuntimeError: gloo\n',
        "RuntimeError: gloo (the end of a Python traceback)",
    ),
    (
        "----------------------\nError Message Summary:\nInvalidArgumentError: x\n",
        "InvalidArgumentError: x (the end of a Paddle error (Error Message Summary))",
    ),
    (
        "[SignalInfo: *** SIGSEGV (@0x0) received by PID 7 (TID 0x7f) from PID 0 ***]\n",
        "its log shows a fatal signal (SignalInfo)",
    ),
    (
        mllog("run_stop", None, 5_000, status="failure") + "\n",
        "its log shows a run_stop with status failure",
    ),
    # a chained exception: the last line of the last traceback, made neutral as any log
    # string is (no mention, no link)
    (
        'Traceback (most recent call last):\n  File "a.py"\nValueError: inner\n\n'
        "During handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "a.py"\n'
        "torch.distributed.DistBackendError: NCCL error, ask @ops at https://x.example\n",
        "torch.distributed.DistBackendError: NCCL error, ask @\u200bops at https:\u200b//x.example"
        " (the end of a Python traceback)",
    ),
]


@pytest.mark.parametrize(("crash", "cause"), CRASHES)
def test_a_log_that_shows_a_crash_fails_the_config_though_its_node_exited_0(
    run_builder: RunBuilder, crash: str, cause: str
) -> None:
    # Paddle's legacy launcher can exit 0 for a worker that died: the log still says so
    b = run_builder.config("1x1").config("2x1", trainers=2)
    b.trainer("1x1", 0, pass_log(100, 100))
    b.trainer("2x1", 0, pass_log(100, 100))
    b.node("2x1", 1, [("trainer-1.log", "trainer", 1, "log", pass_log(100, 100) + crash)])
    cfg = kpis(b).config("2x1")
    assert cfg.status == "failed" and cfg.throughput is None
    assert f"trainer 1 (trainer-1.log) crashed: {cause}" in cfg.problems
    assert kpis(b).config("1x1").status == "ok"


def test_an_error_line_with_no_crash_before_it_is_no_cause(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, "ConnectionError: retrying in 1 s\n" + pass_log(100, 100))
    cfg = kpis(b).config("1x1")
    assert cfg.status == "ok" and not any("crashed" in p for p in cfg.problems)


def test_a_node_that_never_reported_makes_it_incomplete(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1").config("2x1", trainers=2)
    b.trainer("1x1", 0, pass_log(100, 100))
    b.trainer("2x1", 0, pass_log(100, 100))
    cfg = kpis(b).config("2x1")
    assert cfg.status == "incomplete"
    assert cfg.throughput is None and cfg.speedup is None
    assert "node(s) 1 never reported" in cfg.problems


def test_no_throughput_in_any_trainer_log_is_ok_with_none_claimed(run_builder: RunBuilder) -> None:
    # MLPerf v0.7 logs state time to accuracy and no throughput: that is no failure
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, "I1130 nothing useful here\n")
    cfg = kpis(b).config("1x1")
    assert cfg.status == "ok" and cfg.throughput is None and cfg.speedup is None
    assert "no throughput: no trainer log reports one" in cfg.problems


def test_a_partial_sum_is_never_given(run_builder: RunBuilder) -> None:
    b = run_builder.config("2x1", trainers=2)
    b.trainer("2x1", 0, pass_log(100, 100))
    b.trainer("2x1", 1, "nothing\n")
    cfg = kpis(b).config("2x1")
    assert cfg.status == "failed" and cfg.throughput is None


def test_base_not_ok_leaves_speedups_null_with_a_reason(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1").config("1x2", gpus=2)
    b.trainer("1x2", 0, pass_log(200, 200))
    run = kpis(b)
    assert run.config("1x1").status == "incomplete"
    big = run.config("1x2")
    assert big.throughput == 200 and big.speedup is None and big.efficiency is None
    assert "speedup unknown: base config 1x1 is incomplete" in big.problems


def test_time_to_accuracy_from_mllog(run_builder: RunBuilder) -> None:
    log = "\n".join(
        [
            mllog("run_start", None, 1_000_000),
            mllog("tracked_stats", {"throughput": 10.0}, 1_010_000),
            mllog("eval_accuracy", 0.5, 1_100_000, epoch_num=0),
            mllog("eval_accuracy", 0.62, 1_250_000, epoch_num=1),
            mllog("eval_accuracy", 0.7, 1_400_000, epoch_num=2),
        ]
    )
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, log + "\n")
    cfg = kpis(b).config("1x1")
    assert cfg.time_to_accuracy_s == pytest.approx(250.0)
    assert cfg.test_accuracy == pytest.approx(0.7)
    # a later target, never reached
    never = kpis(b, target_accuracy=0.9).config("1x1")
    assert never.time_to_accuracy_s is None
    assert "accuracy never reached the target 0.9 (best 0.7000)" in never.problems


def test_time_to_accuracy_starts_at_the_earliest_run_start(run_builder: RunBuilder) -> None:
    b = run_builder.config("2x1", trainers=2)
    b.trainer("2x1", 0, mllog("run_start", None, 5_000) + "\n" + pass_log(1, 1))
    late = [mllog("run_start", None, 9_000), mllog("eval_accuracy", 0.8, 15_000, epoch_num=0)]
    b.trainer("2x1", 1, "\n".join(late) + "\n" + pass_log(1, 1))
    assert kpis(b).config("2x1").time_to_accuracy_s == pytest.approx(10.0)


def test_paddle_converge_speed_is_taken_as_is(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, "**metrics_data: pass = 4, train_speed = 118.2, converge_speed = 812.0\n")
    assert kpis(b).config("1x1").time_to_accuracy_s == 812.0


def test_no_timing_means_no_time_to_accuracy_and_says_so(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, pass_log(1, 1, accuracies=[0.9]))
    cfg = kpis(b).config("1x1")
    assert cfg.time_to_accuracy_s is None
    assert any(p.startswith("time to accuracy unknown") for p in cfg.problems)


def test_accuracy_pass_as_the_log_numbers_it_else_the_last(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, pass_log(1, 1, accuracies=[0.1, 0.2, 0.3, 0.4]))
    assert kpis(b).config("1x1").test_accuracy == pytest.approx(0.3)  # pass 2
    cfg = kpis(b, accuracy_pass=9).config("1x1")
    assert cfg.test_accuracy == pytest.approx(0.4)
    assert "no test accuracy for pass 9; the last reported is used" in cfg.problems


def test_no_gpu_files_means_null_memory_with_a_reason(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1-1ps", pservers=1)
    b.trainer("1x1-1ps", 0, pass_log(1, 1))
    b.node("1x1-1ps", 1, [("ps.log", "pserver", 0, "log", "serving\n")])
    cfg = kpis(b).config("1x1-1ps")
    assert cfg.status == "ok"
    assert cfg.trainer_gpu_memory_mib is None and cfg.pserver_gpu_memory_mib is None
    assert "no GPU memory samples for the trainers (no GPU?)" in cfg.problems
    assert "no GPU memory samples for the pservers (no GPU?)" in cfg.problems


def test_without_gpu_the_host_rss_is_named_but_not_taken_as_gpu_memory(
    run_builder: RunBuilder,
) -> None:
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, pass_log(1, 1))
    manifest = json.loads((b.root / "1x1" / "node-0.json").read_text())
    (b.root / "1x1" / "node-0.json").write_text(
        json.dumps({**manifest, "peak_host_rss_mib": 812.4})
    )
    cfg = kpis(b).config("1x1")
    assert cfg.trainer_gpu_memory_mib is None
    assert (
        "no GPU memory samples for the trainers (no GPU?); peak host RSS 812 MiB, not GPU memory"
        in cfg.problems
    )


def test_pserver_memory_is_the_peak_over_its_files(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1-2ps", pservers=2)
    b.trainer("1x1-2ps", 0, pass_log(1, 1), GPU_CSV)
    b.node("1x1-2ps", 1, [("ps0.csv", "pserver", 0, "gpu_memory", "2100 MiB\n")])
    b.node("1x1-2ps", 2, [("ps1.csv", "pserver", 1, "gpu_memory", "2300\n2200\n")])
    cfg = kpis(b).config("1x1-2ps")
    assert cfg.pserver_gpu_memory_mib == 2300 and cfg.trainer_gpu_memory_mib == 1000


def test_garbage_and_missing_files_are_problems(run_builder: RunBuilder) -> None:
    b = run_builder.config("2x1", trainers=2)
    b.trainer("2x1", 0, b"\xff\xfe\x00garbage\x00" * 100)  # type: ignore[arg-type]
    b.node("2x1", 1, [("t1.log", "trainer", 1, "log", "")])
    (b.root / "2x1" / "t1.log").unlink()
    cfg = kpis(b).config("2x1")
    assert cfg.status == "failed"
    assert "t1.log: named by node 1 but missing" in cfg.problems
    assert any("NUL byte" in p for p in cfg.problems)


def test_an_invalid_manifest_is_a_problem_not_a_crash(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1")
    b.trainer("1x1", 0, pass_log(1, 1))
    (b.root / "1x1" / "node-0.json").write_text('{"schema": 1, "node": 0')
    cfg = kpis(b).config("1x1")
    assert cfg.status == "failed"
    assert any("node-0.json is not JSON" in p for p in cfg.problems)


def test_a_manifest_path_leaving_the_config_folder_is_refused(run_builder: RunBuilder) -> None:
    b = run_builder.config("1x1").config("other")
    b.trainer("other", 0, pass_log(5, 5))
    b.node("1x1", 0, [("ok.log", "trainer", 0, "log", pass_log(1, 1))])
    manifest = (b.root / "1x1" / "node-0.json").read_text()
    (b.root / "1x1" / "node-0.json").write_text(
        manifest.replace("ok.log", "../other/trainer-0.log")
    )
    cfg = kpis(b).config("1x1")
    assert cfg.status == "failed"
    assert any("must not leave the config folder" in p for p in cfg.problems)
