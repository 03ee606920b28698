"""The Student-t quantile and tail, against scipy (a dev dependency only: the Lambda path
has no scipy), over every confidence a suite's Holm split can ask for."""

import pytest

from distkpi.domain.judging.student_t import t_quantile, t_sf

scipy_stats = pytest.importorskip("scipy.stats")

DFS = [1, 1.5, 2, 3, 4, 5, 7.3, 10, 29, 59, 100, 1000]
PS = [0.51, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 0.99999, 1 - 1e-7]


@pytest.mark.parametrize("df", DFS)
def test_quantiles_are_exact_to_1e_6(df: float) -> None:
    for p in PS:
        expected = scipy_stats.t.ppf(p, df)
        assert t_quantile(p, df) == pytest.approx(expected, rel=1e-6), (p, df)
        assert t_quantile(1 - p, df) == pytest.approx(-expected, rel=1e-6), (p, df)


@pytest.mark.parametrize("df", DFS)
def test_tails_are_exact_to_1e_9(df: float) -> None:
    for x in (0.1, 1.0, 2.5, 4.0, 10.0, 50.0):
        assert t_sf(x, df) == pytest.approx(scipy_stats.t.sf(x, df), rel=1e-9), (x, df)
        assert t_sf(-x, df) == pytest.approx(scipy_stats.t.sf(-x, df), rel=1e-9), (x, df)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="probability"):
        t_quantile(1.0, 5)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_sf(1.0, 0)
