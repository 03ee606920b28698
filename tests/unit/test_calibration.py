"""Calibration from A/A paired jobs: the noise's components on data whose components are
known, and the design they favour."""

from __future__ import annotations

import math
import random

import pytest

from distkpi.domain.judging.settings import VerdictSettings
from distkpi.exceptions import CalibrationError
from distkpi_cli.calibration import calibrate, components_of

SETTINGS = VerdictSettings()
SEED_MATRIX = {"1x1": 1.0, "1x8": 6.1, "2x8-4ps": 10.8, "4x8-8ps": 19.3}  # throughput levels


def log_sd(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


def aa_jobs(
    rng: random.Random, jobs: int, runs: int, allocation: float, within: float, level: float
) -> list[list[float]]:
    """A/A jobs of one config: a throughput level moved by the allocation per job (log sd)
    and by the within-allocation noise per run."""
    out = []
    for _ in range(jobs):
        moved = level * math.exp(allocation * rng.gauss(0, 1))
        out.append([moved * math.exp(within * rng.gauss(0, 1)) for _ in range(runs)])
    return out


def test_the_components_of_two_small_jobs_by_hand() -> None:
    # logs [0, 0.02] and [0.1, 0.12]: within 0.0002, job means 0.01 and 0.11
    jobs = [[1.0, math.exp(0.02)], [math.exp(0.1), math.exp(0.12)]]
    c = components_of("1x8", "throughput", jobs)
    # MSB = 2 * 2 * 0.05^2 = 0.01, n0 = 2: allocation (0.01 - 0.0002) / 2 = 0.0049
    assert c.within_var == pytest.approx(0.0002)
    assert c.allocation_var == pytest.approx(0.0049)
    assert c.allocation_share == pytest.approx(0.0049 / 0.0051)
    assert c.total_cv == pytest.approx(math.sqrt(math.expm1(0.0051)))
    assert c.within_cv == pytest.approx(math.sqrt(math.expm1(0.0002)))
    assert c.to_json() == {
        "total_cv": c.total_cv,
        "allocation_share": c.allocation_share,
        "within_cv": c.within_cv,
        "jobs": 2,
    }


def test_known_components_are_found_again() -> None:
    rng = random.Random(3)
    allocation, within = math.sqrt(log_sd(0.18) ** 2 - log_sd(0.03) ** 2), log_sd(0.03)
    c = components_of("1x8", "throughput", aa_jobs(rng, 400, 8, allocation, within, 745.0))
    assert c.total_cv == pytest.approx(0.18, rel=0.08)
    assert c.within_cv == pytest.approx(0.03, rel=0.05)
    assert c.allocation_share == pytest.approx(1 - within**2 / log_sd(0.18) ** 2, abs=0.01)
    assert c.jobs == 400


def test_test_accuracy_is_measured_as_it_is() -> None:
    rng = random.Random(4)
    jobs = [[0.76 + 0.002 * rng.gauss(0, 1) for _ in range(8)] for _ in range(300)]
    c = components_of("1x8", "test_accuracy", jobs)
    assert c.within_cv == pytest.approx(0.002 / 0.76, rel=0.05)
    assert c.allocation_share < 0.05  # no allocation part in it


def test_one_allocation_with_no_spread_of_its_own_is_all_allocation() -> None:
    jobs = [[100.0] * 4, [110.0] * 4, [90.0] * 4]
    c = components_of("1x1", "throughput", jobs)
    assert (c.within_cv, c.allocation_share) == (0.0, 1.0)


def fleet(total: float, within: float, seed: int = 5) -> dict[str, dict[str, list[list[float]]]]:
    rng = random.Random(seed)
    allocation = math.sqrt(log_sd(total) ** 2 - log_sd(within) ** 2)
    return {
        config: {
            "throughput": aa_jobs(rng, 60, 8, allocation, log_sd(within), level),
            "trainer_gpu_memory_mib": aa_jobs(rng, 60, 8, 0.0, 0.005, 12000.0),
        }
        for config, level in SEED_MATRIX.items()
    }


def test_a_noisy_fleet_with_a_quiet_allocation_favours_paired_runs() -> None:
    found = calibrate(fleet(0.18, 0.03), SETTINGS)
    designs = {d.design: d for d in found.designs}
    assert found.favoured == "paired"
    assert designs["one run"].catch_rate < 0.15  # the 5% or so the bench finds
    assert designs["confirm"].catch_rate < 0.15  # re-running keeps the allocation's part
    assert designs["paired"].catch_rate > 0.95
    assert designs["one run"].runs_per_config == 1.0
    assert 2.0 < designs["paired"].runs_per_config < 3.0
    data = found.to_json()
    assert set(data) == {"configs", "drop", "false_failure_rate", "designs", "favoured"}
    assert set(data["configs"]["1x8"]) == {"throughput", "trainer_gpu_memory_mib"}
    assert [d["design"] for d in data["designs"]] == ["one run", "confirm", "paired"]
    assert data["drop"] == 0.25


def test_a_quiet_fleet_favours_the_single_run() -> None:
    found = calibrate(fleet(0.03, 0.02), SETTINGS)
    assert {d.design: round(d.catch_rate, 2) for d in found.designs}["one run"] == 1.0
    assert found.favoured == "one run"  # as good, and the cheapest


def test_a_fleet_noisy_within_its_allocation_gains_little_from_pairs() -> None:
    found = calibrate(fleet(0.18, 0.127), SETTINGS, drop=0.25)
    paired = next(d for d in found.designs if d.design == "paired")
    assert paired.catch_rate < 0.5


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ({"1x8": {"throughput": [[1.0, 1.1]]}}, "1x8 throughput: 1 A/A job"),
        ({"1x8": {"throughput": [[1.0, 1.1], [1.0]]}}, r"1x8 throughput: job\(s\) \[2\] have"),
        ({"1x8": {"throughput": [[1.0, 0.0], [1.0, 1.0]]}}, "not positive"),
    ],
)
def test_jobs_that_cannot_be_calibrated_say_why(
    jobs: dict[str, dict[str, list[list[float]]]], message: str
) -> None:
    with pytest.raises(CalibrationError, match=message):
        calibrate(jobs, SETTINGS)


def test_a_drop_must_be_a_share() -> None:
    with pytest.raises(CalibrationError, match=r"drop 1\.5"):
        calibrate(fleet(0.18, 0.03), SETTINGS, drop=1.5)


def test_without_throughput_no_design_is_ranked() -> None:
    jobs = {"1x8": {"test_accuracy": [[0.76, 0.761], [0.759, 0.76]]}}
    found = calibrate(jobs, SETTINGS)
    assert (found.designs, found.favoured) == ((), None)
