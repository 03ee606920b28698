"""The KPI rules the field's logs need (issue 23), on run folders written as jobs write them:
direction, targets with parts, aborted runs, throughput per card/process/node/job, none
claimed where none is reported, MLLOG epochs, super-linear efficiency."""

import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.kpis.engine import NOT_REACHED, SUPER_LINEAR_PROBLEM, ConfigKpis, RunKpis
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.exceptions import ContractError
from distkpi_cli.localfs import LocalRunSource
from tests.conftest import RunBuilder, mllog, pass_log


def kpis(builder: RunBuilder, **kw: object) -> RunKpis:
    return compute_run_kpis(LocalRunSource(builder.root), **kw)  # type: ignore[arg-type]


def one(builder: RunBuilder, **kw: object) -> ConfigKpis:
    return kpis(builder, **kw).configs[0]


def wer_log() -> str:
    """RNN-T's shape: word error rate falls to its 0.058 target at about 1,000 s."""
    evals = [(0.9, 25_000), (0.3, 300_000), (0.1, 600_000), (0.0575, 1_000_000), (0.06, 1.1e6)]
    lines = [mllog("run_start", None, 0)]
    lines += [mllog("eval_accuracy", v, int(t), epoch_num=i) for i, (v, t) in enumerate(evals)]
    lines.append(mllog("run_stop", None, 1_200_000, status="success"))
    return "\n".join(lines) + "\n"


def test_lower_is_better_time_to_accuracy_and_test_accuracy(tmp_path: object) -> None:
    b = RunBuilder(tmp_path, target_accuracy=0.058, accuracy_direction="lower", accuracy_pass=3)
    b.config("1x8", gpus=8).trainer("1x8", 0, wer_log())
    cfg = one(b)
    assert cfg.time_to_accuracy_s == pytest.approx(1000.0) and cfg.converged is True
    assert cfg.test_accuracy == pytest.approx(0.0575)
    assert kpis(b).accuracy_direction is Direction.LOWER


def test_a_perplexity_above_one_is_a_test_accuracy_when_lower_is_better(tmp_path: object) -> None:
    b = RunBuilder(tmp_path, target_accuracy=2.69, accuracy_direction="lower", accuracy_pass=0)
    log = mllog("run_start", None, 0) + "\n" + mllog("eval_accuracy", 2.65, 3_857_000) + "\n"
    b.config("gpt3", gpus=8).trainer("gpt3", 0, log)
    cfg = one(b)
    assert cfg.time_to_accuracy_s == pytest.approx(3857.0) and cfg.test_accuracy == 2.65


def test_the_command_line_direction_turns_a_wrong_reading_right(run_builder: RunBuilder) -> None:
    run_builder.config("1x8", gpus=8).trainer("1x8", 0, wer_log())
    wrong = one(run_builder, target_accuracy=0.058)
    assert wrong.time_to_accuracy_s == pytest.approx(25.0)  # what "at or above" gives
    right = one(run_builder, target_accuracy=0.058, accuracy_direction=Direction.LOWER)
    assert right.time_to_accuracy_s == pytest.approx(1000.0)


def test_a_target_above_one_needs_the_lower_direction(run_builder: RunBuilder) -> None:
    run_builder.config("1x1").trainer("1x1", 0, pass_log(1))
    with pytest.raises(ContractError, match="target_accuracy: Input should be less than or"):
        kpis(run_builder, target_accuracy=2.69, accuracy_direction=Direction.HIGHER)
    # stating no direction, the logs may fix it; where none does, a problem says so
    unstated = kpis(run_builder, target_accuracy=2.69).configs[0]
    assert (
        "target_accuracy 2.69 is above 1, but run.json states no accuracy_direction and no "
        "log names a benchmark that fixes it: read as higher is better"
    ) in unstated.problems
    with pytest.raises(ContractError, match="greater than 0"):
        kpis(run_builder, target_accuracy=0.0, accuracy_direction=Direction.LOWER)


def masks_log(*evals: tuple[float, float, int]) -> str:
    lines = [mllog("run_start", None, 0)]
    for i, (bbox, segm, t) in enumerate(evals):
        lines.append(mllog("eval_accuracy", {"BBOX": bbox, "SEGM": segm}, t, epoch_num=i))
    return "\n".join(lines) + "\n"


def test_a_target_with_parts_is_reached_when_every_part_is(tmp_path: object) -> None:
    target = {"BBOX": 0.377, "SEGM": 0.339}
    b = RunBuilder(tmp_path, target_accuracy=target, accuracy_pass=2)
    b.config("1x8", gpus=8)
    b.trainer(
        "1x8",
        0,
        masks_log((0.30, 0.28, 1_000_000), (0.38, 0.33, 2_000_000), (0.379, 0.3391, 3_000_000)),
    )
    cfg = one(b)
    assert cfg.time_to_accuracy_s == pytest.approx(3000.0)
    assert cfg.test_accuracy == pytest.approx(0.379)  # the part the target names first
    assert cfg.test_accuracy_parts == {"BBOX": 0.379, "SEGM": 0.3391}
    assert cfg.to_json()["test_accuracy_parts"] == {"BBOX": 0.379, "SEGM": 0.3391}
    assert not any("timed run_start" in p for p in cfg.problems)


def test_a_target_with_parts_never_reached_says_the_best(tmp_path: object) -> None:
    b = RunBuilder(tmp_path, target_accuracy={"BBOX": 0.377, "SEGM": 0.339}, accuracy_pass=0)
    b.config("1x8", gpus=8).trainer("1x8", 0, masks_log((0.38, 0.33, 1_000_000)))
    cfg = one(b)
    assert cfg.time_to_accuracy_s is None and cfg.converged is False
    assert (
        "accuracy never reached the target BBOX=0.377,SEGM=0.339 (best BBOX=0.3800,SEGM=0.3300)"
        in cfg.problems
    )


def test_an_aborted_run_is_ok_and_did_not_reach_the_target(run_builder: RunBuilder) -> None:
    log = pass_log(100, 110, 120) + mllog("run_start", None, 0) + "\n"
    log += mllog("eval_accuracy", 0.7, 5_000) + "\n"  # above 0.6, but the run says it failed
    log += mllog("run_stop", None, 9_000, status="aborted") + "\n"
    run_builder.config("1x1").trainer("1x1", 0, log)
    cfg = one(run_builder)
    assert cfg.status == "ok" and cfg.throughput == pytest.approx(115.0)
    assert cfg.time_to_accuracy_s is None and cfg.converged is False
    assert NOT_REACHED in cfg.problems
    assert not any("crashed" in p for p in cfg.problems)


def test_no_throughput_anywhere_is_ok_with_a_problem(run_builder: RunBuilder) -> None:
    log = mllog("run_start", None, 0) + "\n" + mllog("eval_accuracy", 0.75, 60_000) + "\n"
    run_builder.config("1x1").config("1x8", gpus=8)
    run_builder.trainer("1x1", 0, log).trainer("1x8", 0, log)
    for cfg in kpis(run_builder).configs:
        assert cfg.status == "ok" and cfg.throughput is None
        assert cfg.time_to_accuracy_s == pytest.approx(60.0)
        assert "no throughput: no trainer log reports one" in cfg.problems


def ips_log(*ips: float) -> str:
    return "".join(
        f"[Train][Iter: {i}/100]loss: 6.9, ips: {v} images/sec\n" for i, v in enumerate(ips)
    )


def test_per_card_reports_count_every_gpu_of_the_config(run_builder: RunBuilder) -> None:
    # PaddleClas on 2 nodes x 8 cards, one log per node: 16 x the mean ips
    run_builder.config("2x8", trainers=2, gpus=8)
    run_builder.trainer("2x8", 0, ips_log(10, 340, 340)).trainer("2x8", 1, ips_log(10, 350, 350))
    cfg = one(run_builder)
    assert cfg.throughput == pytest.approx(16 * 345.0)


def test_per_card_reports_of_one_log_per_process(run_builder: RunBuilder) -> None:
    # Paddle's launcher writes workerlog.<i> per card; all eight uploaded by the one node
    run_builder.config("1x8", gpus=8)
    files = [(f"workerlog.{i}", "trainer", 0, "log", ips_log(10, 300 + i)) for i in range(8)]
    run_builder.node("1x8", 0, files)
    cfg = one(run_builder)
    assert cfg.throughput == pytest.approx(8 * 303.5)


def test_per_job_reports_are_the_configs_figure(run_builder: RunBuilder) -> None:
    dll = "DLL 2020-12-18 11:09:01.000000 - Summary: train.total_ips : 2826.78 img/s\n"
    run_builder.config("2x8", trainers=2, gpus=8)
    run_builder.trainer("2x8", 0, dll).trainer("2x8", 1, "rank 1 logs nothing\n")
    cfg = one(run_builder)
    assert cfg.status == "ok" and cfg.throughput == pytest.approx(2826.78)


def test_per_process_reports_are_summed_and_must_all_be_there(run_builder: RunBuilder) -> None:
    speed = "Epoch[0] Batch [20-40]\tSpeed: {} samples/sec\n"
    run_builder.config("a", trainers=2).config("b", trainers=2)
    run_builder.trainer("a", 0, speed.format(100)).trainer("a", 1, speed.format(120))
    run_builder.trainer("b", 0, speed.format(100)).trainer("b", 1, "nothing\n")
    run = kpis(run_builder)
    assert run.config("a").throughput == pytest.approx(220.0)
    assert run.config("b").status == "failed" and run.config("b").throughput is None


def test_logs_counting_throughput_differently_fail_the_config(run_builder: RunBuilder) -> None:
    run_builder.config("2x1", trainers=2)
    run_builder.trainer("2x1", 0, ips_log(100)).trainer("2x1", 1, pass_log(100))
    cfg = one(run_builder)
    assert cfg.status == "failed"
    assert "throughput not given: trainer logs count it differently (card, process)" in (
        cfg.problems
    )


def test_mllog_epochs_give_the_throughput_the_log_does_not_state(run_builder: RunBuilder) -> None:
    lines = [mllog("train_samples", 1000), mllog("run_start", None, 0)]
    for epoch, (start, stop) in enumerate([(0, 5_000), (5_000, 7_000), (7_000, 9_000)]):
        lines.append(mllog("epoch_start", None, start, epoch_num=epoch))
        lines.append(mllog("epoch_stop", None, stop, epoch_num=epoch))
    run_builder.config("1x8", gpus=8).trainer("1x8", 0, "\n".join(lines) + "\n")
    cfg = one(run_builder)
    assert cfg.status == "ok" and cfg.throughput == pytest.approx(500.0)
    assert cfg.throughput_samples == (pytest.approx(500.0), pytest.approx(500.0))


def test_efficiency_above_1_05_is_a_problem(run_builder: RunBuilder) -> None:
    run_builder.config("1x1").config("1x2", gpus=2).config("1x4", gpus=4)
    run_builder.trainer("1x1", 0, pass_log(100, 100))
    run_builder.trainer("1x2", 0, pass_log(210, 210))  # 1.05 exactly: no problem
    run_builder.trainer("1x4", 0, pass_log(664, 664))  # efficiency 1.66
    run = kpis(run_builder)
    assert run.config("1x4").efficiency == pytest.approx(1.66)
    assert SUPER_LINEAR_PROBLEM in run.config("1x4").problems
    assert SUPER_LINEAR_PROBLEM not in run.config("1x2").problems


def test_a_missing_log_a_node_named_fails_its_config(run_builder: RunBuilder) -> None:
    run_builder.config("1x1").node("1x1", 0, [("t.log", "trainer", 0, "log", "")])
    (run_builder.root / "1x1" / "t.log").unlink()
    cfg = one(run_builder)
    assert cfg.status == "failed" and "t.log: named by node 0 but missing" in cfg.problems


def test_per_node_reports_need_every_trainer_not_every_log(tmp_path: object) -> None:
    b = RunBuilder(
        tmp_path, metrics={"throughput": {"pattern": r"node rate (?P<value>\d+)", "per": "node"}}
    )
    b.config("2x8", trainers=2, gpus=8).config("2x8-silent", trainers=2, gpus=8)
    b.node(
        "2x8",
        0,
        [
            ("a.log", "trainer", 0, "log", "node rate 800\n"),
            ("b.log", "trainer", 0, "log", "nothing\n"),
        ],
    )
    b.trainer("2x8", 1, "node rate 820\n")
    b.trainer("2x8-silent", 0, "node rate 800\n").trainer("2x8-silent", 1, "nothing\n")
    run = kpis(b)
    assert run.config("2x8").status == "ok" and run.config("2x8").throughput == 1620.0
    assert run.config("2x8-silent").status == "failed"
    assert "trainer 1 (trainer-1.log): no throughput reported" in run.config("2x8-silent").problems
