"""A regression is fixed by a value back inside the range its KPI had before, or beyond it
on the better side; ends that are means of logs compare with a slack of their last bits."""

from __future__ import annotations

import pytest

from distkpi.domain.regressions import Regression, RegressionState, regression_id, run_of


def regression(value: float | None, low: float, high: float) -> Regression:
    return Regression(
        "o/r",
        "develop",
        "m",
        "1x1",
        "throughput",
        "m-abc-1",
        "a" * 40,
        "t",
        value,
        100.0,
        low,
        high,
    )


@pytest.mark.parametrize(
    ("later", "fixed"),
    [(96.0, True), (120.0, True), (94.0, False), (None, False), (100.0, True)],
)
def test_a_drop_is_fixed_by_a_value_at_or_above_the_low_end(
    later: float | None, fixed: bool
) -> None:
    assert regression(60.0, 95.0, 105.0).back_in_range(later) is fixed


@pytest.mark.parametrize(("later", "fixed"), [(104.0, True), (50.0, True), (106.0, False)])
def test_a_rise_of_a_lower_is_better_kpi_is_fixed_at_or_below_the_high_end(
    later: float, fixed: bool
) -> None:
    assert regression(150.0, 95.0, 105.0).back_in_range(later) is fixed


def test_ends_computed_as_a_mean_of_logs_take_their_own_value_back() -> None:
    # zero noise: the history's range is 100 computed on the log scale, a hair above 100
    assert regression(60.0, 100.00000000000004, 100.00000000000004).back_in_range(100.0)


def test_its_history_grows_with_each_change_and_its_id_names_its_run() -> None:
    r = regression(60.0, 95.0, 105.0).moved(RegressionState.ACKNOWLEDGED, "alice", "t1", "mine")
    assert r.state is RegressionState.ACKNOWLEDGED
    assert [(c.state.value, c.who, c.note) for c in r.history] == [
        ("acknowledged", "alice", "mine")
    ]
    assert Regression.from_json(r.to_json()) == r
    assert r.id == regression_id("m-abc-1", "1x1", "throughput") == "m-abc-1:1x1:throughput"
    assert run_of(r.id) == "m-abc-1"
    assert run_of("not-an-id") is None
