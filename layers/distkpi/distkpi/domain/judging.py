"""Each KPI of a run against its history, without crying wolf on noisy numbers.

The allowed range of a KPI is a one-sided Student-t prediction interval over the last
baseline values (mean -/+ t * s * sqrt(1 + 1/n)), widened by the run's own within-run
spread when it reports samples; with fewer than ``min_history`` values it falls back to the
suite's relative tolerance around their mean. Only the harmful direction can regress:
throughput, speedup, efficiency and test accuracy must not fall; time to accuracy and GPU
memory must not rise. Where the baseline starts is changepoints.py's business.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

HIGHER_IS_BETTER = {
    "throughput": True,
    "speedup": True,
    "efficiency": True,
    "test_accuracy": True,
    "time_to_accuracy_s": False,
    "trainer_gpu_memory_mib": False,
    "pserver_gpu_memory_mib": False,
}
KPIS = tuple(HIGHER_IS_BETTER)


class KpiVerdict(StrEnum):
    PASS = "pass"
    REGRESSED = "regressed"
    IMPROVED = "improved"
    NO_BASELINE = "no-baseline"
    NOT_ENFORCED = "not-enforced"


class VerdictSettings(BaseModel):
    """Which KPIs fail a merge request and how sure a regression must be (suite `verdict:`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enforced: tuple[str, ...] = KPIS
    tolerance: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    default_tolerance: Annotated[float, Field(ge=0)] = 0.05
    confidence: Annotated[float, Field(gt=0.5, lt=1)] = 0.995
    window: Annotated[int, Field(ge=2)] = 30
    min_history: Annotated[int, Field(ge=2)] = 5
    change_point_p: Annotated[float, Field(gt=0, lt=1)] = 0.01

    @field_validator("enforced")
    @classmethod
    def _known(cls, kpis: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(kpis) - set(KPIS))
        if unknown:
            raise ValueError(f"unknown KPI(s) {', '.join(unknown)}; known: {', '.join(KPIS)}")
        return kpis

    @field_validator("tolerance")
    @classmethod
    def _known_tolerances(cls, tolerance: dict[str, float]) -> dict[str, float]:
        cls._known(tuple(tolerance))
        return tolerance

    def tolerance_of(self, kpi: str) -> float:
        return self.tolerance.get(kpi, self.default_tolerance)


@dataclass(frozen=True)
class Judgement:
    config: str
    kpi: str
    value: float | None
    baseline: float | None
    low: float | None
    high: float | None
    verdict: KpiVerdict
    why: str = ""

    @property
    def delta(self) -> float | None:
        if self.value is None or not self.baseline:
            return None
        return (self.value - self.baseline) / self.baseline

    def to_json(self) -> dict[str, object]:
        return {
            "config": self.config,
            "kpi": self.kpi,
            "value": self.value,
            "baseline": self.baseline,
            "low": self.low,
            "high": self.high,
            "verdict": self.verdict.value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Judgement:
        def number(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        return cls(
            str(data["config"]),
            str(data["kpi"]),
            number("value"),
            number("baseline"),
            number("low"),
            number("high"),
            KpiVerdict(data["verdict"]),
            str(data.get("why", "")),
        )


def normal_quantile(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def t_quantile(p: float, df: int) -> float:
    """Student-t quantile by the Cornish-Fisher expansion (off by < 0.3% for df >= 4)."""
    z = normal_quantile(p)
    v = float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


def allowed_range(
    kpi: str, history: Sequence[float], samples: Sequence[float], settings: VerdictSettings
) -> tuple[float, float, float, str]:
    """(baseline, low, high, how): the range inside which a value is not a regression."""
    recent = list(history)[-settings.window :]
    mean = statistics.fmean(recent)
    if len(recent) < settings.min_history:
        slack = abs(mean) * settings.tolerance_of(kpi)
        how = f"{len(recent)} baseline value(s): ±{settings.tolerance_of(kpi):.0%} tolerance"
        return mean, mean - slack, mean + slack, how
    n = len(recent)
    spread = statistics.stdev(recent) ** 2 * (1 + 1 / n)
    if len(samples) >= 2:
        spread += statistics.variance(samples) / len(samples)
    slack = t_quantile(settings.confidence, n - 1) * math.sqrt(spread)
    how = f"{settings.confidence:.1%} t-interval over {n} values"
    return mean, mean - slack, mean + slack, how


def judge_kpi(
    config: str,
    kpi: str,
    value: float | None,
    history: Sequence[float],
    settings: VerdictSettings,
    *,
    samples: Sequence[float] = (),
    never_converged: bool = False,
) -> Judgement:
    enforced = kpi in settings.enforced
    if never_converged and kpi == "time_to_accuracy_s":
        verdict = KpiVerdict.REGRESSED if enforced else KpiVerdict.NOT_ENFORCED
        base = statistics.fmean(history) if history else None
        return Judgement(config, kpi, None, base, None, None, verdict, "never reached the target")
    if value is None or not history:
        why = "no value" if value is None else "no baseline"
        return Judgement(
            config,
            kpi,
            value,
            None,
            None,
            None,
            KpiVerdict.NO_BASELINE if enforced else KpiVerdict.NOT_ENFORCED,
            why,
        )
    baseline, low, high, how = allowed_range(kpi, history, samples, settings)
    higher_better = HIGHER_IS_BETTER[kpi]
    if (value < low) if higher_better else (value > high):
        verdict = KpiVerdict.REGRESSED
    elif (value > high) if higher_better else (value < low):
        verdict = KpiVerdict.IMPROVED
    else:
        verdict = KpiVerdict.PASS
    if not enforced:
        verdict = KpiVerdict.NOT_ENFORCED
    return Judgement(config, kpi, value, baseline, low, high, verdict, how)
