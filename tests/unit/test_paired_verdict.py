"""The paired verdict: per-pair differences, the paired history, the looks' spending, the
screen that keeps a config going, the leave-one-out check, the tolerance fallback.

The arms are the seed run's real KPIs (examples/seed-run, a real run of the seed matrix)
scaled by known factors: A and B of one pair are the same config on the same nodes, so a
pair differs only by the within-allocation noise (drawn at 3%, as the bench's noise model)
and by the change the head carries."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.paired import (
    LookOutcome,
    evaluate_paired,
    first_pair_d,
    judge_look,
    look_shares,
    pair_d,
)
from distkpi.domain.judging.settings import KPIS, PairedSettings, VerdictSettings
from distkpi.domain.judging.statistics import Judgement, KpiVerdict
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, PairKpis, RunKpis
from tests.unit.test_check_summary import seed_run

SETTINGS = VerdictSettings(paired=PairedSettings())
WITHIN = 0.03  # within-allocation CV of one run
SEED = seed_run()
FAMILIES = 21  # 4 + 5 + 6 + 6: the seed matrix's enforced families


def arm(config: ConfigKpis, factor: float, rng: random.Random) -> ConfigKpis:
    """The config's run with its throughput times ``factor`` (time to accuracy inversely),
    accuracy varying by 0.002 and GPU memory by 0.5% from run to run."""
    assert config.throughput is not None and config.time_to_accuracy_s is not None
    assert config.test_accuracy is not None and config.trainer_gpu_memory_mib is not None
    pserver = config.pserver_gpu_memory_mib
    return replace(
        config,
        throughput=config.throughput * factor,
        time_to_accuracy_s=config.time_to_accuracy_s / factor,
        test_accuracy=config.test_accuracy + rng.gauss(0, 0.002),
        trainer_gpu_memory_mib=config.trainer_gpu_memory_mib * (1 + rng.gauss(0, 0.005)),
        pserver_gpu_memory_mib=None if pserver is None else pserver * (1 + rng.gauss(0, 0.005)),
        pairs=(),
    )


def noise(rng: random.Random) -> float:
    return math.exp(rng.gauss(0, WITHIN))


def paired_run(
    pairs: int,
    rng: random.Random,
    change: dict[str, float] | None = None,
    *,
    upto: dict[str, int] | None = None,
    wild: dict[str, tuple[int, float]] | None = None,
) -> RunKpis:
    """A paired run of the seed matrix: ``pairs`` pairs per config (``upto`` fewer for some,
    0: not reported yet), B's throughput times ``change[config]``, and one ``wild`` pair of
    a config whose B ran slower by the factor given."""
    change, upto, wild = change or {}, upto or {}, wild or {}
    configs = []
    for config in SEED.configs:
        own = []
        for p in range(1, upto.get(config.name, pairs) + 1):
            factor = change.get(config.name, 1.0)
            if wild.get(config.name, (0, 1.0))[0] == p:
                factor *= wild[config.name][1]
            a, b = arm(config, noise(rng), rng), arm(config, factor * noise(rng), rng)
            own.append(PairKpis(p, a, b))
        configs.append(replace(config, pairs=tuple(own)))
    return replace(SEED, configs=tuple(configs), sha="b" * 40, base_sha="a" * 40)


def paired_history(jobs: int, seed: int = 5) -> list[HistoryRow]:
    """The paired history of ``jobs`` past pushes (each an unchanged A/B): their first
    pair's d as the collector records it, through first_pair_d."""
    rng = random.Random(seed)
    rows = []
    for i in range(jobs):
        run = paired_run(1, rng)
        base = run.config(SEED.base_config or "")
        for config in run.configs:
            for kpi, d in first_pair_d(config, base).items():
                rows.append(
                    HistoryRow(
                        f"2026-11-{i + 1:02d}T00:00:00",
                        "PaddlePaddle/Paddle",
                        "develop",
                        run.model,
                        config.name,
                        f"{i:040x}",
                        f"p{i}",
                        kpi,
                        getattr(config, kpi),
                        hardware=config.hardware,
                        paired_d=d,
                    )
                )
    return rows


HISTORY = paired_history(30)


def by_kpi(judgements: Sequence[Judgement], kpi: str, config: str | None = None) -> Judgement:
    return next(j for j in judgements if j.kpi == kpi and config in {None, j.config})


def measured(judgements: Sequence[Judgement]) -> list[Judgement]:
    """Without what a config cannot report (pserver memory of a config without pservers)."""
    return [j for j in judgements if j.why != "no value in both arms of a pair"]


# ----------------------------------------------------------------------------- the d's
def test_a_pair_differs_by_the_log_ratio_and_accuracy_by_its_difference() -> None:
    assert pair_d("throughput", 100.0, 75.0) == pytest.approx(math.log(0.75))
    assert pair_d("time_to_accuracy_s", 100.0, 125.0) == pytest.approx(math.log(1.25))
    assert pair_d("trainer_gpu_memory_mib", 12000.0, 12000.0) == 0.0
    assert pair_d("test_accuracy", 0.712, 0.702) == pytest.approx(-0.01)  # linear
    assert pair_d("throughput", None, 75.0) is None
    assert pair_d("throughput", 0.0, 75.0) is None  # no log ratio of a zero


def test_first_pair_d_is_the_history_value_and_speedup_is_against_the_base_pair() -> None:
    rng = random.Random(1)
    run = paired_run(3, rng, {"4x8-8ps": 0.8})
    base, config = run.config("1x1"), run.config("4x8-8ps")
    found = first_pair_d(config, base)
    pair, base_pair = config.pairs[0], base.pairs[0]
    d_thr = math.log(pair.b.throughput / pair.a.throughput)
    d_base = math.log(base_pair.b.throughput / base_pair.a.throughput)
    assert found["throughput"] == pytest.approx(d_thr)
    assert found["speedup"] == pytest.approx(d_thr - d_base)
    assert found["efficiency"] == pytest.approx(d_thr - d_base)  # the GPU ratio cancels
    assert found["test_accuracy"] == pytest.approx(pair.b.test_accuracy - pair.a.test_accuracy)
    assert found["time_to_accuracy_s"] == pytest.approx(-d_thr)
    # the base config's speedup is 1 by definition: no paired value; 1x1 has no pserver
    assert set(first_pair_d(base, base)) == set(KPIS) - {"speedup", "efficiency"} - {
        "pserver_gpu_memory_mib"
    }
    assert first_pair_d(replace(config, pairs=()), base) == {}


# ----------------------------------------------------------------------------- spending
@pytest.mark.parametrize("pairs", range(1, 9))
def test_the_looks_together_spend_the_suites_rate(pairs: int) -> None:
    shares = look_shares(pairs)
    assert len(shares) == pairs
    assert sum(shares) * SETTINGS.false_failure_rate == pytest.approx(0.01)


def test_the_reference_designs_spending() -> None:
    assert look_shares(4) == (0.0, 0.5, 0.25, 0.25)
    assert look_shares(2) == (0.0, 1.0)
    assert look_shares(1) == (1.0,)


@pytest.mark.parametrize("unreported", [ConfigStatus.OK, ConfigStatus.FAILED])
def test_holm_splits_over_every_family_of_the_run_also_configs_not_yet_reported(
    unreported: ConfigStatus,
) -> None:
    # Given only 1x8 has reported (two pairs), the others none (as engine.run_kpis gives
    # them, failed for now, or ok and empty)
    run = paired_run(2, random.Random(2), upto={"1x1": 0, "2x8-4ps": 0, "4x8-8ps": 0})
    run = replace(
        run,
        configs=tuple(c if c.pairs else replace(c, status=unreported) for c in run.configs),
    )
    decision = judge_look(run, HISTORY, SETTINGS, "1x8", 2)
    # Then look 2 spends half of 1% over all 21 families of the run, Holm's first step
    throughput = by_kpi(decision.judgements, "throughput")
    assert throughput.confidence == pytest.approx(1 - 0.005 / FAMILIES)
    assert decision.outcome is LookOutcome.PASS


# ----------------------------------------------------------------------------- looks
def test_an_unchanged_head_passes_at_the_first_look_after_one_pair() -> None:
    run = paired_run(1, random.Random(3))
    for config in run.configs:
        decision = judge_look(run, HISTORY, SETTINGS, config.name, 1)
        assert decision.outcome is LookOutcome.PASS, decision.why
        assert decision.to_json() == {
            "config": config.name,
            "pair": 1,
            "decision": "stop",
            "outcome": "pass",
            "why": f"{config.name}: pass after 1 pair(s)",
        }
        assert {j.verdict for j in measured(decision.judgements)} == {KpiVerdict.PASS}
        assert all(j.runs == 1 for j in decision.judgements)
    evaluation = evaluate_paired(run, HISTORY, SETTINGS, 1.0)
    assert evaluation.verdict.state is State.SUCCESS


def test_a_slower_head_goes_on_after_the_screen_and_fails_at_look_two() -> None:
    rng = random.Random(4)
    run = paired_run(2, rng, {"1x8": 0.75})
    first = judge_look(run, HISTORY, SETTINGS, "1x8", 1)
    assert first.outcome is LookOutcome.CONTINUE  # look 1 only screens
    assert first.why.startswith("1x8: another pair: throughput -2")
    assert by_kpi(first.judgements, "throughput").low is None  # rate 0: no range yet
    second = judge_look(run, HISTORY, SETTINGS, "1x8", 2)
    assert second.outcome is LookOutcome.FAIL, second.why
    assert second.to_json()["decision"] == "stop"
    assert second.to_json()["outcome"] == "fail"
    throughput = by_kpi(second.judgements, "throughput")
    assert throughput.verdict is KpiVerdict.REGRESSED
    assert throughput.runs == 2
    # value B's mean, baseline A's: the delta is the head's change
    assert throughput.delta == pytest.approx(-0.25, abs=0.04)
    assert throughput.low is not None and throughput.value < throughput.low
    assert by_kpi(second.judgements, "time_to_accuracy_s").verdict is KpiVerdict.REGRESSED
    # the final evaluation replays the config's last look
    stopped = replace_pairs(run, {"1x1": 1, "2x8-4ps": 1, "4x8-8ps": 1})
    evaluation = evaluate_paired(stopped, HISTORY, SETTINGS, 1.0)
    assert evaluation.verdict.state is State.FAILURE
    assert any(r.startswith("1x8 tput -2") for r in evaluation.verdict.reasons)
    assert by_kpi(evaluation.judgements, "throughput", "1x8").runs == 2


def replace_pairs(run: RunKpis, keep: dict[str, int]) -> RunKpis:
    """The run with some configs' pairs cut to what they ran (they stopped earlier)."""
    return replace(
        run,
        configs=tuple(
            replace(c, pairs=c.pairs[: keep.get(c.name, len(c.pairs))]) for c in run.configs
        ),
    )


def test_a_speedup_in_doubt_keeps_the_base_config_going() -> None:
    run = paired_run(1, random.Random(6), {"4x8-8ps": 0.8})
    own = judge_look(run, HISTORY, SETTINGS, "4x8-8ps", 1)
    assert own.outcome is LookOutcome.CONTINUE
    base = judge_look(run, HISTORY, SETTINGS, "1x1", 1)
    assert base.outcome is LookOutcome.CONTINUE
    assert "speedup" in base.why
    assert {j.verdict for j in measured(base.judgements)} == {KpiVerdict.PASS}  # its own: fine


def test_a_speedup_uses_the_pairs_the_base_config_has_reported() -> None:
    run = paired_run(3, random.Random(7), {"4x8-8ps": 0.8}, upto={"1x1": 1})
    decision = judge_look(run, HISTORY, SETTINGS, "4x8-8ps", 3)
    assert by_kpi(decision.judgements, "speedup").runs == 1
    assert by_kpi(decision.judgements, "throughput").runs == 3


def test_one_wild_pair_does_not_fail_a_config() -> None:
    # Given 1x8's second pair ran half as fast in B, the others unchanged
    run = paired_run(4, random.Random(8), wild={"1x8": (2, 0.5)})
    second = judge_look(run, HISTORY, SETTINGS, "1x8", 2)
    throughput = by_kpi(second.judgements, "throughput")
    # Then look 2 holds the significant throughput in doubt: without the wild pair no harm
    assert second.outcome is LookOutcome.CONTINUE, second.why
    assert "held: not without its most harmful pair" in throughput.why
    assert throughput.verdict is KpiVerdict.PASS
    final = evaluate_paired(run, HISTORY, SETTINGS, 1.0)
    assert final.verdict.state is State.SUCCESS, final.verdict.reasons


def test_a_single_pair_never_fails_by_the_test() -> None:
    settings = VerdictSettings(paired=PairedSettings(max_pairs=1))
    run = paired_run(1, random.Random(9), {"1x8": 0.5})
    decision = judge_look(run, HISTORY, settings, "1x8", 1)
    assert decision.outcome is LookOutcome.PASS
    assert "held" in by_kpi(decision.judgements, "throughput").why


# ----------------------------------------------------------------------------- fallback
def test_too_short_a_paired_history_falls_back_to_the_tolerance() -> None:
    short = [r for r in HISTORY if r.sha in {f"{i:040x}" for i in range(3)}]
    rng = random.Random(10)
    unchanged = judge_look(paired_run(1, rng), short, SETTINGS, "1x8", 1)
    throughput = by_kpi(unchanged.judgements, "throughput")
    assert throughput.why == (
        "paired: 3 paired history value(s), fewer than 5: B within ±5% of A over 1 pair(s)"
    )
    assert throughput.verdict is KpiVerdict.PASS
    assert throughput.low == pytest.approx(throughput.baseline / 1.05)
    slower = paired_run(2, rng, {"1x8": 0.8})
    first = judge_look(slower, short, SETTINGS, "1x8", 1)
    assert first.outcome is LookOutcome.CONTINUE  # beyond, but one pair cannot say more
    second = judge_look(slower, short, SETTINGS, "1x8", 2)
    assert second.outcome is LookOutcome.FAIL
    assert by_kpi(second.judgements, "throughput").verdict is KpiVerdict.REGRESSED


def test_accuracy_is_judged_on_its_difference() -> None:
    rng = random.Random(11)
    run = paired_run(1, rng)
    configs = []
    for c in run.configs:
        pairs = []
        for p in c.pairs:
            assert p.a.test_accuracy is not None
            pairs.append(replace(p, b=replace(p.b, test_accuracy=p.a.test_accuracy - 0.02)))
        configs.append(replace(c, pairs=tuple(pairs)))
    lower = replace(run, configs=tuple(configs))
    short = [r for r in HISTORY if r.sha == f"{0:040x}"]
    accuracy = by_kpi(judge_look(lower, short, SETTINGS, "1x8", 1).judgements, "test_accuracy")
    assert accuracy.value == pytest.approx(accuracy.baseline - 0.02)
    assert accuracy.low == pytest.approx(accuracy.baseline - 0.05)
    assert accuracy.verdict is KpiVerdict.PASS  # 0.02 inside the 5% tolerance, as a difference


def test_a_head_that_never_converges_regresses_time_to_accuracy() -> None:
    run = paired_run(1, random.Random(12))
    c = run.config("1x8")
    pair = replace(c.pairs[0], b=replace(c.pairs[0].b, time_to_accuracy_s=None, converged=False))
    broken = replace(
        run, configs=tuple(replace(x, pairs=(pair,)) if x.name == "1x8" else x for x in run.configs)
    )
    decision = judge_look(broken, HISTORY, SETTINGS, "1x8", 1)
    assert decision.outcome is LookOutcome.FAIL
    tta = by_kpi(decision.judgements, "time_to_accuracy_s")
    assert (tta.verdict, tta.why) == (
        KpiVerdict.REGRESSED,
        "B never reached the target in a pair where A did",
    )


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("config", "look", "message"),
    [
        ("1x8", 0, "look 0 of config 1x8: looks are 1..4"),
        ("1x8", 5, "look 5 of config 1x8: looks are 1..4"),
        ("1x8", 3, "look 3 of config 1x8: only 2 pair(s)"),
        ("9x9", 1, "config '9x9' is not one of the run's"),
    ],
)
def test_a_look_that_cannot_be_judged_says_why(config: str, look: int, message: str) -> None:
    run = paired_run(2, random.Random(13))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        judge_look(run, HISTORY, SETTINGS, config, look)


def test_a_broken_config_stops_at_its_look() -> None:
    run = paired_run(1, random.Random(16))
    broken = replace(
        run,
        configs=tuple(
            replace(c, status=ConfigStatus.FAILED, problems=("node 1 exited 137",))
            if c.name == "1x8"
            else c
            for c in run.configs
        ),
    )
    decision = judge_look(broken, HISTORY, SETTINGS, "1x8", 1)
    assert decision.to_json() == {
        "config": "1x8",
        "pair": 1,
        "decision": "stop",
        "outcome": "fail",
        "why": "1x8: failed: node 1 exited 137; no more pairs",
    }
    assert evaluate_paired(broken, HISTORY, SETTINGS, 1.0).verdict.state is State.ERROR


def test_a_suite_that_is_not_paired_cannot_judge_a_look() -> None:
    run = paired_run(1, random.Random(14))
    with pytest.raises(ValueError, match="not paired"):
        judge_look(run, HISTORY, VerdictSettings(), "1x8", 1)


def test_a_config_without_pairs_at_the_end_is_judged_as_not_measured() -> None:
    run = paired_run(1, random.Random(15), upto={"2x8-4ps": 0})
    evaluation = evaluate_paired(run, HISTORY, SETTINGS, 1.0)
    missing = [j for j in evaluation.judgements if j.config == "2x8-4ps"]
    assert {j.verdict for j in missing} == {KpiVerdict.NO_BASELINE}
    enforced = VerdictSettings(paired=PairedSettings(), enforced=("throughput",))
    strict = evaluate_paired(run, HISTORY, enforced, 1.0)
    assert strict.verdict.state is State.ERROR
    assert strict.verdict.reasons == ("2x8-4ps throughput not reported",)


@pytest.mark.parametrize("seed", range(6))
def test_the_final_verdict_agrees_with_the_looks(seed: int) -> None:
    """Configs looked at after every pair, each going on as its look decides; the final
    evaluation then fails the run exactly when a look failed a config."""
    rng = random.Random(100 + seed)
    change = {SEED.configs[seed % 4].name: 0.75} if seed % 2 else {}
    wild = {"1x8": (1, 0.6)} if seed % 3 == 0 else {}
    whole = paired_run(4, rng, change, wild=wild)
    ran = dict.fromkeys((c.name for c in whole.configs), 1)
    going, failed = set(ran), False
    for look in range(1, 5):
        run = replace_pairs(whole, ran)
        for name in sorted(going):
            decision = judge_look(run, HISTORY, SETTINGS, name, look)
            if decision.stop:
                going.discard(name)
                failed |= decision.outcome is LookOutcome.FAIL
        for name in going:
            ran[name] += 1
    final = evaluate_paired(replace_pairs(whole, ran), HISTORY, SETTINGS, 1.0)
    assert (final.verdict.state is State.FAILURE) == failed
    assert not going  # the last look always stops
    assert failed == bool(change)  # a 25% drop is caught, one wild pair is not a failure
    runs = {j.config: j.runs for j in final.judgements if j.kpi == "throughput"}
    assert runs == ran


def test_an_alignment_the_arms_measured_spends_none_of_holms_rate() -> None:
    """loss_alignment of pairs whose arms measured it is judged by the suite's limit, so it
    is no Holm family: the run's other families share the rate as without it."""
    run = paired_run(2, random.Random(2))
    settings = VerdictSettings(
        paired=PairedSettings(), enforced=(*SETTINGS.enforced, "loss_alignment")
    )
    alignment = {"aligned": True, "loss_alignment": 0.0, "loss_alignment_step": 10}
    aligned = replace(
        run,
        configs=tuple(
            replace(c, pairs=tuple(replace(p, **alignment) for p in c.pairs)) for c in run.configs
        ),
    )
    decision = judge_look(aligned, HISTORY, settings, "1x8", 2)
    # every config's arms measured it: the run's families are the seed matrix's alone
    judged = by_kpi(decision.judgements, "loss_alignment", "1x8")
    assert judged.why.startswith("paired: B's loss curve against A's in 2 pair(s)")
    throughput = by_kpi(decision.judgements, "throughput")
    assert throughput.confidence == pytest.approx(1 - 0.005 / FAMILIES)
