"""A suite's own patterns (`metrics:`): checked when the suite is read, matched by RE2,
taking precedence over the built-in readers for their KPI."""

import io

import pytest
import yaml

from distkpi.domain.github.webhook import Trigger
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.domain.logs.declared import parse_time
from distkpi.domain.logs.logformats import ParseSettings, parse_log
from distkpi.domain.logs.logsummary import Per
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.domain.planning.jobs import run_spec_for
from distkpi.domain.planning.suites import parse_suite
from distkpi.exceptions import ContractError
from distkpi_cli.localfs import LocalRunSource
from tests.conftest import RunBuilder

SUITE = """\
name: clas
command: [python, train.py]
target_accuracy: 0.7
accuracy_pass: 0
accuracy_tolerance: 0.01
configs: [{name: 1x8, trainers: 1, gpus_per_trainer: 8, batch_size: 256}]
"""
METRICS = {
    "throughput": {"pattern": r"avg_ips: (?P<value>[0-9.]+) images/sec", "per": "card"},
    "test_accuracy": {"pattern": r"\[Eval\].*top1: (?P<value>[0-9.]+)"},
    "time_marks": {"start": "Start training", "pattern": r"^\[(?P<time>[^\]]+)\]"},
}
LOG = """\
[2021/08/10 10:00:00] root INFO: Start training
[2021/08/10 10:01:00] root INFO: [Train][Iter: 1/9]ips: 999.0 images/sec, avg_ips: 300.0 images/sec
[2021/08/10 10:02:00] root INFO: [Train][Iter: 2/9]ips: 999.0 images/sec, avg_ips: 320.0 images/sec
[2021/08/10 10:03:00] root INFO: [Train][Iter: 3/9]ips: 999.0 images/sec, avg_ips: 340.0 images/sec
[2021/08/10 10:10:00] root INFO: [Eval][Epoch 1][Avg]CELoss: 2.1, top1: 0.5, top5: 0.8
[2021/08/10 10:20:00] root INFO: [Eval][Epoch 2][Avg]CELoss: 1.1, top1: 0.71, top5: 0.9
Pass: 0, Test Accuracy: 0.99
"""


def settings() -> ParseSettings:
    return ParseSettings(metrics=DeclaredMetrics.model_validate(METRICS))


@pytest.mark.parametrize(
    ("metrics", "where"),
    [
        (
            {"throughput": {"pattern": "ips: ([0-9.]+)", "per": "card"}},
            "metrics.throughput.pattern",
        ),
        (
            {"throughput": {"pattern": "(?P<value>[0-9.", "per": "card"}},
            "metrics.throughput.pattern",
        ),
        ({"throughput": {"pattern": "(?P<value>1)"}}, "metrics.throughput.per"),
        ({"throughput": {"pattern": "(?P<value>1)", "per": "gpu"}}, "metrics.throughput.per"),
        (
            {"test_accuracy": {"pattern": r"(?<=top1: )(?P<value>\d)"}},
            "metrics.test_accuracy.pattern",
        ),
        ({"time_marks": {"start": "(", "pattern": "(?P<time>.)"}}, "metrics.time_marks.start"),
        ({"time_marks": {"start": "go", "pattern": "(.)"}}, "metrics.time_marks.pattern"),
        ({"tput": {"pattern": "(?P<value>1)"}}, "metrics.tput"),
    ],
)
def test_a_bad_declared_pattern_names_the_suite_file_and_field(
    metrics: dict[str, object], where: str
) -> None:
    text = SUITE + yaml.safe_dump({"metrics": metrics})
    with pytest.raises(ContractError) as err:
        parse_suite(text, "infra/suites/clas.yaml")
    assert str(err.value).startswith("infra/suites/clas.yaml: invalid suite: ")
    assert f"{where}:" in str(err.value)


def test_the_errors_say_why() -> None:
    bad = {"throughput": {"pattern": "ips: ([0-9.]+)", "per": "card"}}
    with pytest.raises(ContractError, match=r"has no \(\?P<value>...\) group"):
        parse_suite(SUITE + yaml.safe_dump({"metrics": bad}), "s.yaml")
    bad = {"test_accuracy": {"pattern": "(?<=x)(?P<value>1)"}}
    with pytest.raises(ContractError, match="not a valid RE2 pattern: invalid perl operator"):
        parse_suite(SUITE + yaml.safe_dump({"metrics": bad}), "s.yaml")


def test_declared_metrics_reach_run_json() -> None:
    suite = parse_suite(
        SUITE
        + "accuracy_direction: lower\nwarmup_reports: 2\n"
        + yaml.safe_dump({"metrics": METRICS}),
        "s.yaml",
    )
    trigger = Trigger("o/r", "a" * 40, "refs/heads/develop", "develop", "push", "develop")
    spec = run_spec_for("r1", trigger, suite)
    data = spec.to_json()
    assert data["metrics"]["throughput"] == METRICS["throughput"]
    assert data["accuracy_direction"] == "lower" and data["warmup_reports"] == 2


def test_declared_patterns_take_precedence_over_the_built_in_readers() -> None:
    out = parse_log(io.BytesIO(LOG.encode()), settings())
    # avg_ips, not the built-in reader's ips; warm-up drops the first of three
    assert out.best_throughput() is not None and out.best_throughput()[0] == pytest.approx(330.0)
    assert out.throughput_per() is Per.CARD
    # the declared accuracy, not fluid_benchmark's Pass line
    assert out.last_accuracy == pytest.approx(0.71)
    start = parse_time("2021/08/10 10:00:00")
    assert out.run_start_s == start
    assert out.first_time_reaching(0.7) == pytest.approx(start + 1200)  # type: ignore[operator]


def test_undeclared_kpis_still_come_from_the_built_in_readers() -> None:
    only = DeclaredMetrics.model_validate({"test_accuracy": METRICS["test_accuracy"]})
    out = parse_log(io.BytesIO(LOG.encode()), ParseSettings(metrics=only))
    assert out.best_throughput() is not None and out.best_throughput()[0] == pytest.approx(999.0)


def test_a_declared_value_that_is_not_a_number_is_a_problem() -> None:
    out = parse_log(io.BytesIO(b"avg_ips: 127.0.0.1 images/sec\n"), settings())
    assert out.best_throughput() is None
    assert out.problems == ["a declared pattern's value is not a number; skipped"]


def test_a_time_that_is_no_time_is_a_problem() -> None:
    log = "[yesterday] Start training\n[noon] [Eval] top1: 0.8\n"
    out = parse_log(io.BytesIO(log.encode()), settings())
    assert out.run_start_s is None and out.last_accuracy == 0.8
    assert out.problems == [
        "a time_marks time is not a date and time or unix seconds; skipped (2 times)"
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1628589600", 1628589600.0),
        ("1628589600.5", 1628589600.5),
        ("2021-08-10 10:00:00", 1628589600.0),
        ("2021-08-10 10:00:00,250", 1628589600.25),
        ("[2021/08/10 10:00:00]", 1628589600.0),
        ("2021-08-10T10:00:00+02:00", 1628582400.0),
        ("10:00:00", None),
        ("nan", None),
    ],
)
def test_times_a_log_prints(text: str, seconds: float | None) -> None:
    assert parse_time(text) == seconds


def test_a_declared_run_folder_gives_its_kpis(run_builder: RunBuilder) -> None:
    run_builder.run["metrics"] = METRICS
    run_builder.run["target_accuracy"] = 0.7
    run_builder.config("1x8", gpus=8).trainer("1x8", 0, LOG)
    cfg = compute_run_kpis(LocalRunSource(run_builder.root)).configs[0]
    assert cfg.throughput == pytest.approx(8 * 330.0)
    assert cfg.time_to_accuracy_s == pytest.approx(1200.0)
    assert cfg.test_accuracy == pytest.approx(0.71)


def test_a_pattern_matching_across_lines_never_hides_a_line(run_builder: RunBuilder) -> None:
    # \s+ could span a newline over the whole chunk; each line is matched on its own
    declared = {"throughput": {"pattern": r"speed\s+(?P<value>\d+)", "per": "job"}}
    log = "speed\n7\nspeed 5\nspeed 6\n"
    out = parse_log(
        io.BytesIO(log.encode()),
        ParseSettings(metrics=DeclaredMetrics.model_validate(declared), warmup_reports=0),
    )
    assert out.samples() == [5.0, 6.0]


def test_a_suite_whose_patterns_number_no_pass_needs_no_accuracy_pass() -> None:
    from distkpi.domain.planning.jobs import plan_jobs

    text = SUITE.replace("accuracy_pass: 0\n", "") + yaml.safe_dump({"metrics": METRICS})
    suite = parse_suite(text, "s.yaml")
    trigger = Trigger("o/r", "a" * 40, "refs/heads/develop", "develop", "push", "develop")
    spec = run_spec_for("r1", trigger, suite)
    assert suite.accuracy_pass is None and spec.accuracy_pass is None
    # the job runs its own number of passes: no DISTKPI_EPOCHS from a pass nobody chose
    (plan,) = plan_jobs(spec, suite, "bucket")
    assert "DISTKPI_EPOCHS" not in plan.environment
    numbered = parse_suite(SUITE.replace("accuracy_pass: 0", "accuracy_pass: 3"), "s.yaml")
    (plan,) = plan_jobs(run_spec_for("r1", trigger, numbered), numbered, "bucket")
    assert plan.environment["DISTKPI_EPOCHS"] == "4"


@pytest.mark.parametrize("accuracy_pass", [None, 3])
def test_declared_accuracy_numbers_no_pass_so_no_pass_is_missed(
    run_builder: RunBuilder, accuracy_pass: int | None
) -> None:
    run_builder.run["metrics"] = METRICS
    run_builder.run["target_accuracy"] = 0.7
    run_builder.run["accuracy_pass"] = accuracy_pass
    run_builder.config("1x8", gpus=8).trainer("1x8", 0, LOG)
    cfg = compute_run_kpis(LocalRunSource(run_builder.root)).configs[0]
    assert cfg.test_accuracy == pytest.approx(0.71)  # the last evaluation the pattern read
    assert cfg.problems == ("no GPU memory samples for the trainers (no GPU?)",)


def test_a_log_that_numbers_other_passes_still_says_the_one_asked_for_is_missing(
    run_builder: RunBuilder,
) -> None:
    run_builder.run["accuracy_pass"] = 3
    run_builder.config("1x8", gpus=8).trainer("1x8", 0, LOG)
    cfg = compute_run_kpis(LocalRunSource(run_builder.root)).configs[0]
    assert cfg.test_accuracy == pytest.approx(0.99)  # fluid_benchmark's `Pass: 0` line
    assert "no test accuracy for pass 3; the last reported is used" in cfg.problems
