"""A suite's verdict settings: which KPIs are enforced, their tolerances, the false
failure rate and confirmation; read by the webhook, so nothing statistical here."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from distkpi.domain.kpis import catalogue

# every judged KPI's own direction (None: the run's, accuracy_direction), from the catalogue
HIGHER_IS_BETTER = {k.name: k.higher_is_better for k in catalogue.judged()}


# every judged KPI, and those a suite enforces unless it lists its own (the optional ones,
# the LLM KPIs, only where a suite names them)
ALL_KPIS = tuple(HIGHER_IS_BETTER)
KPIS = tuple(k.name for k in catalogue.judged() if not k.optional)


def more_is_better(kpi: str, given: bool | None = None) -> bool:
    """Whether more of ``kpi`` is better: ``given`` where the run says (an accuracy that is
    a loss: lower is better), else the KPI's own direction (higher where it is the run's
    and the run does not say)."""
    if given is not None:
        return given
    own = HIGHER_IS_BETTER[kpi]
    return True if own is None else own


# KPIs that are one test: efficiency is speedup divided by the config's constant GPU ratio
FAMILY = {k.name: k.family for k in catalogue.judged() if k.family is not None}


# rates and times vary by a factor, not by an amount (a time to accuracy is the reciprocal
# of a throughput, skewed upwards): judged on the log scale; accuracy stays as it is
LOG_SCALE = frozenset(k.name for k in catalogue.judged() if k.log_scale)


class ConfirmSettings(BaseModel):
    """Re-run the configs in doubt (suite `verdict: confirm:`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # the per-run confidence of the looser range that puts a first run in doubt
    screen: Annotated[float, Field(gt=0.5, lt=1)] = 0.8
    max_runs: Annotated[int, Field(ge=2, le=10)] = 4
    # the share of the run-to-run variance that belongs to the machine, not the run: the
    # same on a re-run on the same hardware, so averaging k runs does not remove it
    machine_share: Annotated[float, Field(ge=0, lt=1)] = 0.0


class PairedSettings(BaseModel):
    """Measure the merge base (A) and the head (B) alternately in one job, on the same
    nodes, and judge the paired differences (suite `verdict: paired:`): the allocation's
    part of the noise cancels. Runs go W A B | B A | A B | B A: an unmeasured warm-up run of
    A, then pairs, each pair a look after which a config stops or goes on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_pairs: Annotated[int, Field(ge=1, le=8)] = 4
    warmup: bool = True
    # the per-run rate of the looser range that keeps a config going after a look
    screen: Annotated[float, Field(gt=0, lt=1)] = 0.5
    # a failure also needs the pairs without the most harmful one to show harm at this z
    consistency_z: Annotated[float, Field(ge=0)] = 1.645


class VerdictSettings(BaseModel):
    """Which KPIs fail a merge request and how sure a regression must be (suite `verdict:`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enforced: tuple[str, ...] = KPIS
    # whether the suite lists `enforced` itself: a KPI it names that a config can report and
    # does not is then the run's error; by default every KPI is judged where it is reported
    enforced_by_suite: bool = False
    tolerance: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    default_tolerance: Annotated[float, Field(ge=0)] = 0.05
    # the chance that an unchanged commit's run fails, all its enforced KPIs together
    false_failure_rate: Annotated[float, Field(gt=0, lt=0.5)] = 0.01
    # older suites' name for 1 - false_failure_rate; per run since the rate is
    confidence: Annotated[float, Field(gt=0.5, lt=1)] | None = None
    window: Annotated[int, Field(ge=2)] = 30
    min_history: Annotated[int, Field(ge=2)] = 5
    # below min_history values the tolerance is no test of the noise: "fail" (a KPI beyond
    # it regresses) or "warn" (it is beyond-tolerance, said in the verdict, and fails nothing)
    short_history: Literal["fail", "warn"] = "fail"
    # every run of a commit counts in the baseline, not only its latest: repeated runs of one
    # commit (A/A runs) are then the machine's own measure of its noise
    count_repeats: bool = False
    change_point_p: Annotated[float, Field(gt=0, lt=1)] = 0.01
    confirm: ConfirmSettings | None = None
    paired: PairedSettings | None = None
    # the KPIs whose regression a person may accept (`/distkpi accept`); None: every KPI
    acceptable: tuple[str, ...] | None = None

    @field_validator("enforced")
    @classmethod
    def _known(cls, kpis: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(kpis) - set(ALL_KPIS))
        if unknown:
            raise ValueError(f"unknown KPI(s) {', '.join(unknown)}; known: {', '.join(ALL_KPIS)}")
        return kpis

    @field_validator("acceptable")
    @classmethod
    def _known_acceptable(cls, kpis: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if kpis is None else cls._known(kpis)

    @field_validator("tolerance")
    @classmethod
    def _known_tolerances(cls, tolerance: dict[str, float]) -> dict[str, float]:
        cls._known(tuple(tolerance))
        return tolerance

    @model_validator(mode="before")
    @classmethod
    def _listed_by_the_suite(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "enforced_by_suite" not in data:
            return {**data, "enforced_by_suite": "enforced" in data}
        return data

    @model_validator(mode="before")
    @classmethod
    def _confidence_is_the_rate(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or data.get("confidence") is None:
            return data
        rate = 1 - float(data["confidence"])
        given = data.get("false_failure_rate")
        if given is not None and not math.isclose(float(given), rate):
            raise ValueError(
                f"confidence {data['confidence']} and false_failure_rate {given} disagree; "
                "give false_failure_rate only"
            )
        return {**data, "false_failure_rate": rate, "confidence": None}

    @model_validator(mode="after")
    def _screen_below_the_verdict(self) -> VerdictSettings:
        if self.confirm is not None and self.confirm.screen >= 1 - self.false_failure_rate:
            raise ValueError(
                f"confirm.screen {self.confirm.screen} must lie in (0.5, "
                f"{1 - self.false_failure_rate:g}): below the verdict's own confidence"
            )
        return self

    @model_validator(mode="after")
    def _paired_or_confirmed(self) -> VerdictSettings:
        if self.confirm is not None and self.paired is not None:
            raise ValueError("paired and confirm: a suite confirms by re-running or by pairs")
        return self

    @model_validator(mode="after")
    def _history_settings_unpaired(self) -> VerdictSettings:
        if self.paired is not None and (self.short_history != "fail" or self.count_repeats):
            raise ValueError(
                "short_history and count_repeats are for judging against the history; "
                "a paired suite judges each pair's B against its A"
            )
        return self

    def tolerance_of(self, kpi: str) -> float:
        return self.tolerance.get(kpi, self.default_tolerance)

    def look_rate(self, look: int) -> float:
        """The false-failure rate spent on the look'th judgement of one commit. Confirming
        looks up to max_runs times, so the rate is split over the looks (half on the first,
        the rest evenly): by the union bound the whole sequence keeps false_failure_rate."""
        if self.confirm is None:
            return self.false_failure_rate
        if look <= 1:
            return self.false_failure_rate / 2
        return self.false_failure_rate / 2 / (self.confirm.max_runs - 1)
