"""A commit's runs judged: their KPIs against the baseline, the verdict, the headline, and
which configs are in doubt enough to re-run. The collector and `distkpi judge` both call
evaluate(), so they cannot disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distkpi.domain.commit_status import State
from distkpi.domain.judging.history import HistoryRow, evidence_of
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.judging.statistics import Judgement, in_doubt, judge_all
from distkpi.domain.judging.verdict import Verdict, decide, describe
from distkpi.domain.kpis.engine import RunKpis


@dataclass(frozen=True)
class Evaluation:
    """A finished run's KPIs judged against its baseline: what is stored and published."""

    kpis: RunKpis
    judgements: tuple[Judgement, ...]
    verdict: Verdict
    description: str
    # configs to re-run before the verdict is final (a first run that screened borderline)
    in_doubt: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kpis": self.kpis.to_json(),
            "judgements": [{**j.to_json(), "why": j.why} for j in self.judgements],
            "state": self.verdict.state.value,
            "reasons": list(self.verdict.reasons),
            "description": self.description,
            "in_doubt": list(self.in_doubt),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evaluation:
        return cls(
            kpis=RunKpis.from_json(data["kpis"]),
            judgements=tuple(Judgement.from_json(j) for j in data.get("judgements", [])),
            verdict=Verdict(State(data["state"]), tuple(data.get("reasons", ()))),
            description=str(data["description"]),
            in_doubt=tuple(str(c) for c in data.get("in_doubt", ())),
        )


def unjudged(run: RunKpis, why: str) -> Evaluation:
    """A run's KPIs stored without a verdict on them (a diagnosis job's: its times are
    profiled): no judgement, the state its configs' success or failure alone gives."""
    failed = [c.name for c in run.configs if c.status.value != "ok"]
    state = State.ERROR if failed else State.SUCCESS
    reasons = tuple(f"{name} did not complete" for name in failed)
    return Evaluation(run, (), Verdict(state, reasons), why)


def evaluate(
    run: RunKpis,
    baseline: Sequence[HistoryRow],
    settings: VerdictSettings,
    accuracy_tolerance: float,
    resets: Mapping[str, str] | None = None,
    *,
    look: int = 1,
) -> Evaluation:
    """Judge every KPI against the baseline (resets: config -> time after which it counts)
    at the rate of this commit's look'th judgement, decide the verdict and say why in a
    headline. A success with KPIs in doubt, while the suite confirms and runs are left,
    names the configs to re-run; a failure or an error is final at once."""
    evidence = evidence_of(run, baseline, settings, resets)
    judgements = judge_all(evidence, settings, settings.look_rate(look))
    verdict = decide(run, accuracy_tolerance, judgements)
    doubtful: tuple[str, ...] = ()
    confirm = settings.confirm
    if verdict.state is State.SUCCESS and confirm is not None and look < confirm.max_runs:
        found = in_doubt(evidence, settings, look)
        doubtful = tuple(c.name for c in run.configs if c.name in found)
    return Evaluation(run, tuple(judgements), verdict, describe(run, verdict, judgements), doubtful)
