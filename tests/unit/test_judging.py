"""Verdicts per KPI: directions, the noise-aware range, its fallback, change points."""

import random

import pytest

from distkpi.domain.changepoints import baseline_after_change, last_change_point
from distkpi.domain.judging import KpiVerdict, VerdictSettings, judge_kpi, t_quantile

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
