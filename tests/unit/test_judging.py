"""Verdicts per KPI: directions, the noise-aware range, its fallback, change points."""

import random
from dataclasses import replace

import pytest

from distkpi.domain.judging.changepoints import baseline_after_change, last_change_point
from distkpi.domain.judging.evaluation import evaluate
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.settings import ConfirmSettings, VerdictSettings
from distkpi.domain.judging.statistics import (
    KpiEvidence,
    KpiVerdict,
    holm_levels,
    in_doubt,
    judge_all,
    judge_kpi,
)
from distkpi.domain.judging.student_t import t_quantile
from distkpi.domain.kpis.engine import RunKpis
from distkpi.domain.planning.suites import parse_suite
from distkpi.exceptions import ContractError
from tests.unit.test_check_summary import history_of, seed_run

SETTINGS = VerdictSettings()


def noisy(mean: float, cv: float, n: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [mean * (1 + cv * rng.gauss(0, 1)) for _ in range(n)]


@pytest.mark.parametrize(
    ("p", "df", "expected"), [(0.995, 29, 2.756), (0.975, 9, 2.262), (0.95, 4, 2.132)]
)
def test_t_quantile_matches_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, rel=3e-3)


@pytest.mark.parametrize(
    ("kpi", "value", "verdict"),
    [
        ("throughput", 80.0, KpiVerdict.REGRESSED),
        ("throughput", 120.0, KpiVerdict.IMPROVED),
        ("throughput", 101.0, KpiVerdict.PASS),
        ("speedup", 80.0, KpiVerdict.REGRESSED),
        ("efficiency", 80.0, KpiVerdict.REGRESSED),
        ("test_accuracy", 80.0, KpiVerdict.REGRESSED),
        ("time_to_accuracy_s", 120.0, KpiVerdict.REGRESSED),
        ("time_to_accuracy_s", 80.0, KpiVerdict.IMPROVED),
        ("trainer_gpu_memory_mib", 120.0, KpiVerdict.REGRESSED),
        ("pserver_gpu_memory_mib", 80.0, KpiVerdict.IMPROVED),
    ],
)
def test_each_direction(kpi: str, value: float, verdict: KpiVerdict) -> None:
    history = noisy(100, 0.02, 20)
    judged = judge_kpi("4x8", kpi, value, history, SETTINGS)
    assert judged.verdict is verdict
    assert judged.low is not None and judged.high is not None and judged.low < 100 < judged.high


def test_the_range_follows_the_noise() -> None:
    quiet = judge_kpi("c", "throughput", 90.0, noisy(100, 0.01, 30), SETTINGS)
    loud = judge_kpi("c", "throughput", 90.0, noisy(100, 0.18, 30), SETTINGS)
    assert quiet.verdict is KpiVerdict.REGRESSED
    assert loud.verdict is KpiVerdict.PASS  # a 10% dip is within 18% run-to-run noise


def test_fewer_than_five_values_fall_back_to_the_suite_tolerance() -> None:
    settings = VerdictSettings(tolerance={"throughput": 0.1})
    judged = judge_kpi("c", "throughput", 91.0, [100.0, 100.0, 100.0], settings)
    assert (judged.low, judged.high) == (pytest.approx(90.0), pytest.approx(110.0))
    assert judged.verdict is KpiVerdict.PASS
    assert judge_kpi("c", "throughput", 89.0, [100.0] * 3, settings).verdict is KpiVerdict.REGRESSED


def test_within_run_samples_widen_the_range() -> None:
    history = noisy(100, 0.01, 30)
    plain = judge_kpi("c", "throughput", 96.0, history, SETTINGS)
    wobbly = judge_kpi("c", "throughput", 96.0, history, SETTINGS, samples=[80, 112, 90, 102])
    assert plain.low is not None and wobbly.low is not None and wobbly.low < plain.low


def test_never_converging_is_a_regression_not_a_missing_value() -> None:
    judged = judge_kpi(
        "c", "time_to_accuracy_s", None, [600.0] * 10, SETTINGS, never_converged=True
    )
    assert judged.verdict is KpiVerdict.REGRESSED


def test_no_history_and_not_enforced() -> None:
    assert judge_kpi("c", "throughput", 1.0, [], SETTINGS).verdict is KpiVerdict.NO_BASELINE
    settings = VerdictSettings(enforced=("speedup",))
    assert (
        judge_kpi("c", "throughput", 1.0, [100.0] * 9, settings).verdict is KpiVerdict.NOT_ENFORCED
    )


def test_a_step_change_is_found_and_the_baseline_starts_after_it() -> None:
    history = noisy(100, 0.03, 30) + noisy(75, 0.03, 8, seed=2)
    assert last_change_point(history) == 30
    baseline = baseline_after_change(history, SETTINGS)
    assert len(baseline) == 8
    # the commit that made the step was judged against the old level and regressed ...
    before = baseline_after_change(history[:30], SETTINGS)
    assert judge_kpi("c", "throughput", 76.0, before, SETTINGS).verdict is KpiVerdict.REGRESSED
    # ... and a later commit at the new level passes instead of alarming again
    assert judge_kpi("c", "throughput", 76.0, baseline, SETTINGS).verdict is KpiVerdict.PASS


def test_noise_alone_is_no_change_point() -> None:
    assert last_change_point(noisy(100, 0.18, 40)) is None


def evidence(config: str, kpi: str, values: list[float], history: list[float]) -> KpiEvidence:
    return KpiEvidence(config, kpi, tuple(values), tuple(history))


def test_holm_steps_down_and_stops_at_the_first_hypothesis_kept() -> None:
    levels, stopped = holm_levels({"a": 0.001, "b": 0.003, "c": 0.03, "d": 0.5}, 0.01)
    assert levels["a"] == pytest.approx(0.01 / 4) and levels["b"] == pytest.approx(0.01 / 3)
    assert levels["c"] == levels["d"] == stopped == pytest.approx(0.01 / 2)


def test_the_run_s_rate_is_split_over_its_kpis_and_each_says_at_what_confidence() -> None:
    history = noisy(100, 0.02, 30)
    many = [evidence(f"c{i}", "throughput", [100.0], history) for i in range(10)]
    judged = judge_all(many, SETTINGS)
    assert [j.confidence for j in judged] == [pytest.approx(1 - 0.01 / 10)] * 10
    alone = judge_all(many[:1], SETTINGS)[0]
    assert alone.confidence == pytest.approx(0.99)
    assert alone.low is not None and judged[0].low is not None and judged[0].low < alone.low


def test_speedup_and_efficiency_are_one_test() -> None:
    history = noisy(10, 0.02, 30)
    pair = [
        evidence("4x8", "speedup", [10.0], history),
        evidence("4x8", "efficiency", [10.0], history),
    ]
    assert [j.confidence for j in judge_all(pair, SETTINGS)] == [pytest.approx(0.99)] * 2


def test_several_runs_judge_their_mean_and_disagreeing_runs_widen_the_range() -> None:
    history = noisy(100, 0.05, 30)
    agreeing = judge_all(
        [evidence("c", "throughput", [94.0, 95.0, 96.0, 95.0], history)], SETTINGS
    )[0]
    assert agreeing.value == pytest.approx(95.0) and agreeing.runs == 4
    wild = judge_all([evidence("c", "throughput", [75.0, 115.0, 80.0, 110.0], history)], SETTINGS)[
        0
    ]
    assert wild.low is not None and agreeing.low is not None and wild.low < agreeing.low


def test_re_running_does_not_average_away_the_machine_s_share_of_the_noise() -> None:
    history = noisy(100, 0.05, 30)
    machine = VerdictSettings(confirm=ConfirmSettings(machine_share=0.9))
    one = judge_all([evidence("c", "throughput", [95.0], history)], machine)[0]
    same = judge_all([evidence("c", "throughput", [95.0] * 4, history)], machine)[0]
    assert one.low is not None and same.low is not None
    # four identical runs: about as wide as one (averaging would halve it)
    assert (same.baseline or 0) - same.low > 0.9 * ((one.baseline or 0) - one.low)


def test_a_false_cut_near_the_end_keeps_the_spread_of_the_values_before_it() -> None:
    settings = VerdictSettings(tolerance={"throughput": 0.01})
    judged = judge_all(
        [
            KpiEvidence(
                "c",
                "throughput",
                (97.0,),
                (100.0, 101.0, 99.0),
                (),
                False,
                tuple(noisy(100, 0.03, 30)),
            )
        ],
        settings,
    )[0]
    assert judged.confidence is not None  # a t-interval, not the 1% tolerance
    assert judged.verdict is KpiVerdict.PASS


def test_confirming_spends_half_the_rate_on_the_first_look() -> None:
    settings = VerdictSettings(confirm=ConfirmSettings(screen=0.8, max_runs=4))
    assert settings.look_rate(1) == pytest.approx(0.005)
    assert settings.look_rate(2) == settings.look_rate(4) == pytest.approx(0.005 / 3)
    assert VerdictSettings(confidence=0.995).false_failure_rate == pytest.approx(0.005)


def test_in_doubt_is_between_the_screen_and_the_verdict() -> None:
    settings = VerdictSettings(confirm=ConfirmSettings(screen=0.8, max_runs=4))
    history = noisy(100, 0.02, 30, seed=4)
    mean = sum(history) / len(history)
    doubtful = [evidence("a", "throughput", [mean * 0.955], history)]
    assert in_doubt(doubtful, settings, look=1) == {"a"}
    assert in_doubt([evidence("a", "throughput", [mean], history)], settings, look=1) == set()
    assert in_doubt([evidence("a", "throughput", [mean * 0.8], history)], settings, look=1) == set()


@pytest.mark.parametrize(
    ("confirm", "field"),
    [
        ("{max_runs: 1}", "verdict.confirm.max_runs"),
        ("{max_runs: 11}", "verdict.confirm.max_runs"),
        ("{screen: 0.5}", "verdict.confirm.screen"),
        ("{screen: 0.995}", "confirm.screen 0.995 must lie in (0.5, 0.99)"),
    ],
)
def test_a_bad_confirm_names_the_file_and_the_field(confirm: str, field: str) -> None:
    text = (
        "name: m\ncommand: [python, x.py]\ntarget_accuracy: 0.6\naccuracy_pass: 1\n"
        "accuracy_tolerance: 0.01\nconfigs:\n"
        "  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 8}\n"
        f"verdict:\n  confirm: {confirm}\n"
    )
    with pytest.raises(ContractError) as raised:
        parse_suite(text, "suites/m.yaml")
    assert "suites/m.yaml" in str(raised.value) and field in str(raised.value)


def test_rates_and_times_are_judged_on_the_log_scale_accuracy_is_not() -> None:
    history = noisy(100, 0.1, 30)
    tput = judge_kpi("c", "throughput", 100.0, history, SETTINGS)
    assert tput.low is not None and tput.high is not None and tput.baseline is not None
    # a factor either way, not an amount: the range reaches further up than down
    assert tput.high - tput.baseline > tput.baseline - tput.low
    assert tput.high / tput.baseline == pytest.approx(tput.baseline / tput.low)
    assert "of the log" in tput.why
    acc = judge_kpi("c", "test_accuracy", 0.7, [0.7 + 0.001 * (i % 3) for i in range(30)], SETTINGS)
    assert acc.low is not None and acc.high is not None and acc.baseline is not None
    assert acc.high - acc.baseline == pytest.approx(acc.baseline - acc.low)


def steady_history(run: RunKpis) -> list[HistoryRow]:
    """12 earlier runs of the seed's configs, 1% noise; the base's speedup is 1 in each."""

    def earlier(config: str, kpi: str, value: float, rng: random.Random) -> float:
        fixed = kpi == "test_accuracy" or (config == run.base_config and kpi != "throughput")
        return value if fixed else value * (1 + 0.01 * rng.gauss(0, 1))

    return history_of(run, earlier, seed=5)


def test_under_confirm_the_base_configs_speedup_is_no_holm_family() -> None:
    """A confirmed base config's per-run speedups are its runs' ratios to their own mean:
    they vary, but speedup is 1 by definition, so they are no test that shifts the
    others' levels."""
    run = seed_run()
    base = next(c for c in run.configs if c.name == run.base_config)
    ratios = (0.97, 1.0, 1.03)
    confirmed_base = replace(base, run_values={"speedup": ratios, "efficiency": ratios})
    confirmed = replace(run, configs=tuple(confirmed_base if c is base else c for c in run.configs))
    settings = VerdictSettings(confirm=ConfirmSettings())
    history = steady_history(run)
    judged = evaluate(confirmed, history, settings, accuracy_tolerance=0.001).judgements
    plain = evaluate(run, history, settings, accuracy_tolerance=0.001).judgements
    for kpi in ("speedup", "efficiency"):
        (j,) = [j for j in judged if j.config == base.name and j.kpi == kpi]
        assert (
            j.verdict is KpiVerdict.PASS and j.why == "the base config's: 1 by definition, no test"
        )
        assert j.low is None and j.high is None and j.confidence is None
    others = [(j.config, j.kpi, j.confidence) for j in judged if j.config != base.name]
    assert others == [(j.config, j.kpi, j.confidence) for j in plain if j.config != base.name]


@pytest.mark.parametrize("history", [[0.97], [0.97, 0.9, 0.99, 0.93, 0.985, 0.95]])
def test_an_accuracys_allowed_range_stops_at_1(history: list[float]) -> None:
    # a ±15% tolerance (one earlier value) or a t-interval (six) around 0.97 reaches past 1
    settings = VerdictSettings(tolerance={"test_accuracy": 0.15})
    judged = judge_kpi("1x2", "test_accuracy", 0.95, history, settings)
    assert judged.high == 1.0
    assert judged.low is not None and judged.low < 0.95
