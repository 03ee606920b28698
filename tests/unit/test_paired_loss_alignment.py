"""A paired run's arms against each other's training loss curve: B (the head) must give A's
(the base commit's) curve, at the same steps and within the suite's alignment, as a config
must give the base config's in an unpaired run. The curves are real: the per-step losses of
the two PaddleNLP Trainer logs in tests/data/real/paddlenlp/ (provenance in its README), one
run standing for both arms of an unchanged commit, the other for a head that trains another
way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from distkpi.domain.contracts import Alignment
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.paired import LookOutcome, evaluate_paired, judge_look
from distkpi.domain.judging.settings import KPIS, PairedSettings, VerdictSettings
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.kpis.engine import ConfigKpis, PairKpis, RunKpis, arms_loss_alignment
from distkpi.domain.logs.logformats import parse_log
from tests.unit.test_check_summary import seed_run

PADDLENLP = Path(__file__).resolve().parents[1] / "data" / "real" / "paddlenlp"
ALIGNMENT = Alignment(max_rel_diff=0.02, from_step=10)


def curve(name: str) -> dict[int, float]:
    with (PADDLENLP / name).open("rb") as stream:
        return parse_log(stream).loss_by_step


OCNLI = curve("fewclue_ocnli_a9.log")  # steps 10..400
BUSTM = curve("fewclue_bustm_a9_ft_b_lr54.log")  # steps 10..500
SEED = seed_run()


def arms(a: dict[int, float], b: dict[int, float], pair: int = 1) -> PairKpis:
    config = SEED.config(SEED.base_config or "")
    return PairKpis(pair, replace(config, loss_curve=a), replace(config, loss_curve=b))


def test_the_same_run_in_both_arms_is_the_same_curve() -> None:
    measured, problem = arms_loss_alignment(arms(OCNLI, dict(OCNLI)), ALIGNMENT)
    assert (measured.aligned, measured.loss_alignment, problem) == (True, 0.0, None)
    assert measured.loss_alignment_step in OCNLI


def test_a_head_that_logs_other_steps_is_not_the_same_curve() -> None:
    measured, problem = arms_loss_alignment(arms(OCNLI, BUSTM), ALIGNMENT)
    assert measured.aligned is False
    assert problem == (
        "pair 1: B's loss curve is not at A's steps: 10 step(s) only B reported, 0 only A, "
        "the first 410 (from step 10)"
    )


def test_a_head_whose_loss_differs_at_the_same_steps_is_beyond_the_alignment() -> None:
    """B is the other run's curve over the steps A ran (the first 400 of its 500)."""
    head = {step: loss for step, loss in BUSTM.items() if step in OCNLI}
    measured, problem = arms_loss_alignment(arms(OCNLI, head), ALIGNMENT)
    step = measured.loss_alignment_step
    assert step is not None and measured.aligned is False
    worst = max(abs(head[s] - OCNLI[s]) / OCNLI[s] for s in OCNLI if s >= 10)
    assert measured.loss_alignment == pytest.approx(worst)
    assert problem == (
        f"pair 1: B's loss curve {worst:.2%} from A's at step {step} "
        f"({head[step]:.6g} vs {OCNLI[step]:.6g}), beyond 2.00%"
    )


def test_no_common_step_says_so() -> None:
    late = Alignment(max_rel_diff=0.02, from_step=1000)
    measured, problem = arms_loss_alignment(arms(OCNLI, OCNLI), late)
    assert measured.aligned is None
    assert problem == (
        "pair 1: loss alignment of B against A unknown: no step from 1000 in both arms' loss curves"
    )


def test_the_pairs_alignment_survives_the_stored_record() -> None:
    measured, _ = arms_loss_alignment(arms(OCNLI, BUSTM), ALIGNMENT)
    stored = PairKpis.from_record(measured.to_record(), measured.a.name)
    assert (stored.aligned, stored.loss_alignment, stored.loss_alignment_step) == (
        measured.aligned,
        measured.loss_alignment,
        measured.loss_alignment_step,
    )
    assert measured.to_json()["aligned"] is False


def paired_run(*pairs: PairKpis) -> RunKpis:
    """The seed run with its base config paired: these pairs, the other configs none."""
    base = SEED.base_config or ""
    configs = tuple(replace(c, pairs=pairs if c.name == base else ()) for c in SEED.configs)
    return replace(SEED, configs=configs, sha="b" * 40, base_sha="a" * 40)


ENFORCED = VerdictSettings(paired=PairedSettings(max_pairs=2), enforced=(*KPIS, "loss_alignment"))
NO_HISTORY: list[HistoryRow] = []


def _judged(run: RunKpis, look: int) -> tuple[LookOutcome, KpiVerdict, str]:
    base = run.base_config or ""
    decision = judge_look(run, NO_HISTORY, ENFORCED, base, look)
    (judgement,) = [j for j in decision.judgements if j.kpi == "loss_alignment"]
    return decision.outcome, judgement.verdict, judgement.why


def test_an_enforced_alignment_fails_a_paired_config_whose_head_changes_the_curve() -> None:
    same, _ = arms_loss_alignment(arms(OCNLI, dict(OCNLI), 1), ALIGNMENT)
    apart, _ = arms_loss_alignment(arms(OCNLI, BUSTM, 2), ALIGNMENT)
    outcome, verdict, why = _judged(paired_run(same), 1)
    assert verdict is KpiVerdict.PASS and outcome is not LookOutcome.FAIL
    assert why.startswith("paired: B's loss curve against A's in 1 pair(s), at most 0.00%")
    outcome, verdict, why = _judged(paired_run(same, apart), 2)
    assert (outcome, verdict) == (LookOutcome.FAIL, KpiVerdict.REGRESSED)
    assert "not the same curve in pair(s) 2" in why
    evaluation = evaluate_paired(paired_run(same, apart), NO_HISTORY, ENFORCED, 0.001)
    assert any(
        j.kpi == "loss_alignment" and j.verdict is KpiVerdict.REGRESSED
        for j in evaluation.judgements
    )


def test_pairs_without_an_alignment_are_judged_as_before() -> None:
    config: ConfigKpis = SEED.config(SEED.base_config or "")
    plain = PairKpis(1, config, config)
    decision = judge_look(paired_run(plain), NO_HISTORY, ENFORCED, config.name, 1)
    assert not any(
        j.kpi == "loss_alignment" and j.why.startswith("paired: B's loss curve")
        for j in decision.judgements
    )
