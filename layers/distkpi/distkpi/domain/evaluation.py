"""A finished run judged: its KPIs against the baseline, the verdict and the headline. The
collector and `distkpi judge` both call evaluate(), so they cannot disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distkpi.domain.commit_status import State
from distkpi.domain.history import HistoryRow, judge_run
from distkpi.domain.judging import Judgement, VerdictSettings
from distkpi.domain.kpis import RunKpis
from distkpi.domain.verdict import Verdict, decide, describe


@dataclass(frozen=True)
class Evaluation:
    """A finished run's KPIs judged against its baseline: what is stored and published."""

    kpis: RunKpis
    judgements: tuple[Judgement, ...]
    verdict: Verdict
    description: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kpis": self.kpis.to_json(),
            "judgements": [{**j.to_json(), "why": j.why} for j in self.judgements],
            "state": self.verdict.state.value,
            "reasons": list(self.verdict.reasons),
            "description": self.description,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evaluation:
        return cls(
            kpis=RunKpis.from_json(data["kpis"]),
            judgements=tuple(Judgement.from_json(j) for j in data.get("judgements", [])),
            verdict=Verdict(State(data["state"]), tuple(data.get("reasons", ()))),
            description=str(data["description"]),
        )


def evaluate(
    run: RunKpis,
    baseline: Sequence[HistoryRow],
    settings: VerdictSettings,
    accuracy_tolerance: float,
    resets: Mapping[str, str] | None = None,
) -> Evaluation:
    """Judge every KPI against the baseline (resets: config -> time after which it counts),
    decide the run's verdict and say why in a headline."""
    judgements = judge_run(run, baseline, settings, resets)
    verdict = decide(run, accuracy_tolerance, judgements)
    return Evaluation(run, tuple(judgements), verdict, describe(run, verdict, judgements))
