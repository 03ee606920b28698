"""Which configs of a finished run a diagnosis job profiles, and against which commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from distkpi.domain.diagnosis.texts import TIMING_KPIS
from distkpi.domain.planning.suites import DiagnoseSettings, DiagnoseWhen

if TYPE_CHECKING:  # the webhook plans follow-ups and imports no statistics
    from distkpi.domain.contracts import RunSpec
    from distkpi.domain.github.webhook import Trigger
    from distkpi.domain.judging.statistics import Judgement

REGRESSED = "regressed"  # KpiVerdict.REGRESSED's value


def regressed_timing(judgements: Sequence[Judgement]) -> tuple[str, ...]:
    """The configs with a regressed timing KPI, in the order first judged."""
    found = [j.config for j in judgements if j.kpi in TIMING_KPIS and j.verdict == REGRESSED]
    return tuple(dict.fromkeys(found))


def diagnosed_configs(
    settings: DiagnoseSettings, spec: RunSpec, judgements: Sequence[Judgement]
) -> tuple[str, ...]:
    """The configs a diagnosis job profiles: those with a regressed timing KPI (`on:
    regression`), every config (`always`), none (`never`)."""
    if settings.on is DiagnoseWhen.NEVER:
        return ()
    if settings.on is DiagnoseWhen.ALWAYS:
        return tuple(c.name for c in spec.configs)
    return regressed_timing(judgements)


def diagnosis_base(spec: RunSpec, trigger: Trigger) -> str | None:
    """The commit a diagnosis compares the run's with: a paired run's base, a pull
    request's base, a push's previous head; None when there is none, or it is the run's
    own commit (an unchanged head has nothing to diagnose)."""
    if spec.paired is not None:
        base = None if spec.paired.calibration else spec.paired.base_sha
    elif trigger.event == "pull_request":
        base = trigger.base_sha
    else:
        base = trigger.before
    if base is None or base == spec.sha or set(base) == {"0"}:
        return None
    return base
