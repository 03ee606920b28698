"""Does the verdict cry wolf per run, and does it catch real regressions? A simulation.

    python bench/verdict_simulation.py [--trials 1000] [--drops 200] [--machine-share 0.5]
        [--smoke: 20 trials, 5 drops, one CV, one worker: that it runs]

Whole runs of the seed's matrix (1x1, 1x8, 2x8-4ps, 4x8-8ps), every KPI enforced, judged
exactly as the collector judges them (domain.combining.combine, then evaluation.evaluate:
baseline after the last change point, Holm's split of the false-failure rate, confirmation
looks). Each trial starts from 30 develop runs of history.

How the KPIs are related, as in real runs: each config's throughput carries noise of the
given coefficient of variation (CV), split into a per-machine part (``--machine-share`` of
the variance) that stays the same when the commit is re-run on the same hardware, and a
per-run part that re-running averages away. Speedup and efficiency follow from the
throughputs; time to accuracy moves inversely with throughput, plus 3% of its own; test
accuracy varies by 0.002 and GPU memory by 0.5%. Accuracy alignment across configs is a
fixed tolerance, not a judgement against history, and is left out (tolerance 1).

Policies:
- one run: one run per commit, judged at the suite's false-failure rate (1% per run);
- confirm: `confirm: {screen: 0.8, max_runs: 4}`; configs in doubt are re-run, on the same
  machine, until the evidence is conclusive or there are four runs;
- k runs: every config run K times (``--fixed-runs``) for every commit, judged together.

Per policy and CV:
- false failures per unchanged run (any enforced KPI of any config regressed), and per KPI
  judgement (regressed judgements / enforced judgements with a value and a baseline);
- caught: a drop of 25% in one config's throughput (the config drawn at random) or of 20% in
  one multi-GPU config's speedup lands and stays; the share of trials in which commit 1 or
  commit 2 is judged `failure` (commit 1's runs join the history when it passes, as a push
  to develop would);
- runs per config per commit: the mean number of runs of a config (the GPU cost).

    python bench/verdict_simulation.py --paired [--cv 0.18] [--within 0.03 0.05]
        [--max-pairs 4 2] [--warmup-effect MU SD]

The paired designs (suite `verdict: paired:`), in the reference noise model of paired A/B
runs (see PairedNoise): each config's job runs an unmeasured warm-up of A, then pairs in the
order A B | B A | A B | B A on one allocation; after each pair the config's look is judged by
domain.judging.paired.judge_look, and it stops or runs its next pair as the look decides;
the commit's verdict is domain.judging.paired.evaluate_paired's. The paired history is 30
pushes' paired jobs (unchanged), each its first pair's d (first_pair_d). Per design: false
failures per unchanged run (all KPIs of all configs together), the drops caught at the
first commit, runs per config per commit (the warm-up counted as a quarter run), and how
often the final verdict and the looks' decisions differ (they should not).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import random
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import distkpi.domain.judging.history as history_module
from distkpi.domain.commit_status import State
from distkpi.domain.contracts import RunSpec
from distkpi.domain.judging.changepoints import split_at_change
from distkpi.domain.judging.evaluation import Evaluation, evaluate
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.paired import (
    LookOutcome,
    evaluate_paired,
    first_pair_d,
    judge_look,
)
from distkpi.domain.judging.settings import (
    KPIS,
    ConfirmSettings,
    PairedSettings,
    VerdictSettings,
)
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.kpis.combining import combine
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, PairKpis, RunKpis

CONFIGS = (  # name, gpus, pservers, throughput
    ("1x1", 1, 0, 300.0),
    ("1x8", 8, 0, 2200.0),
    ("2x8-4ps", 16, 4, 4000.0),
    ("4x8-8ps", 32, 8, 7000.0),
)
SPEC = RunSpec.model_validate(
    {
        "schema": 1,
        "run_id": "sim",
        "repo": "PaddlePaddle/Paddle",
        "sha": "0" * 40,
        "ref": "refs/heads/develop",
        "model": "resnet50",
        "target_accuracy": 0.6,
        "accuracy_pass": 4,
        "accuracy_tolerance": 1.0,
        "configs": [
            {
                "name": name,
                "trainers": max(1, gpus // 8),
                "gpus_per_trainer": min(gpus, 8),
                "pservers": ps,
                "batch_size": 64,
                "nodes": max(1, gpus // 8) + ps,
            }
            for name, gpus, ps, _ in CONFIGS
        ],
    }
)
HISTORY = 30
ONE_RUN = VerdictSettings()


@dataclass(frozen=True)
class Noise:
    cv: float
    machine_share: float

    @property
    def machine(self) -> float:
        return self.cv * self.machine_share**0.5

    @property
    def per_run(self) -> float:
        return self.cv * (1 - self.machine_share) ** 0.5


Change = dict[str, float]  # config -> throughput factor


def one_run(
    rng: random.Random,
    noise: Noise,
    machine: dict[str, float],
    change: Change,
    configs: Sequence[str],
) -> dict[str, ConfigKpis]:
    """One run of the given configs; ``machine``: each config's fixed offset for this commit."""
    out = {}
    for name, gpus, ps, level in CONFIGS:
        if name not in configs:
            continue
        factor = max(0.05, 1 + machine[name] + noise.per_run * rng.gauss(0, 1))
        throughput = level * change.get(name, 1.0) * factor
        out[name] = ConfigKpis(
            name=name,
            gpus=gpus,
            status=ConfigStatus.OK,
            throughput=throughput,
            time_to_accuracy_s=600.0 * level / throughput * (1 + 0.03 * rng.gauss(0, 1)),
            test_accuracy=0.76 + 0.002 * rng.gauss(0, 1),
            trainer_gpu_memory_mib=15000.0 * (1 + 0.005 * rng.gauss(0, 1)),
            pserver_gpu_memory_mib=3000.0 * (1 + 0.005 * rng.gauss(0, 1)) if ps else None,
            problems=(),
            converged=True,
        )
    return out


def machine_offsets(rng: random.Random, noise: Noise) -> dict[str, float]:
    return {name: noise.machine * rng.gauss(0, 1) for name, *_ in CONFIGS}


def rows_of(run_kpis: Sequence[ConfigKpis], index: int) -> list[HistoryRow]:
    at = f"2026-01-01T00:00:{index:05d}"
    return [
        HistoryRow(
            at,
            "r",
            "develop",
            "resnet50",
            c.name,
            f"{index:040x}",
            f"h{index}",
            kpi,
            c.value(kpi),
        )
        for c in run_kpis
        for kpi in KPIS
    ]


@dataclass
class Outcome:
    failed: bool
    regressed: int  # enforced judgements regressed
    judged: int  # enforced judgements with a value and a baseline
    config_runs: int  # runs of configs spent
    kpis: tuple[ConfigKpis, ...]  # what joins the history


# policy, CV, machine share, fixed runs, scenario, seed, machine share the suite declares
Trial = tuple[str, float, float, int, str, int, float]
Policy = Callable[[random.Random, Noise, list[HistoryRow], Change], Outcome]


def judged(
    settings: VerdictSettings,
    runs: list[dict[str, ConfigKpis]],
    history: list[HistoryRow],
    look: int,
) -> tuple[RunKpis, Evaluation]:
    combined = combine(SPEC, runs)
    return combined, evaluate(combined, history, settings, SPEC.accuracy_tolerance, look=look)


def _count(evaluation: Evaluation) -> tuple[int, int]:
    enforced = [
        j
        for j in evaluation.judgements
        if j.baseline is not None and j.verdict is not KpiVerdict.NOT_ENFORCED
    ]
    return sum(j.verdict is KpiVerdict.REGRESSED for j in enforced), len(enforced)


def policy_runs(k: int) -> Policy:
    def run(rng: random.Random, noise: Noise, history: list[HistoryRow], change: Change) -> Outcome:
        machine = machine_offsets(rng, noise)
        names = [c[0] for c in CONFIGS]
        runs = [one_run(rng, noise, machine, change, names) for _ in range(k)]
        combined, evaluation = judged(ONE_RUN, runs, history, look=1)
        regressed, total = _count(evaluation)
        failed = evaluation.verdict.state is State.FAILURE
        return Outcome(failed, regressed, total, k * len(CONFIGS), combined.configs)

    return run


def policy_confirm(
    rng: random.Random, noise: Noise, history: list[HistoryRow], change: Change, declared: float
) -> Outcome:
    settings = VerdictSettings(
        confirm=ConfirmSettings(screen=0.8, max_runs=4, machine_share=declared)
    )
    machine = machine_offsets(rng, noise)
    names = [c[0] for c in CONFIGS]
    runs = [one_run(rng, noise, machine, change, names)]
    spent = len(CONFIGS)
    look = 1
    combined, evaluation = judged(settings, runs, history, look)
    while evaluation.in_doubt:
        look += 1
        runs.append(one_run(rng, noise, machine, change, evaluation.in_doubt))
        spent += len(evaluation.in_doubt)
        combined, evaluation = judged(settings, runs, history, look)
    regressed, total = _count(evaluation)
    failed = evaluation.verdict.state is State.FAILURE
    return Outcome(failed, regressed, total, spent, combined.configs)


def start_history(rng: random.Random, noise: Noise) -> list[HistoryRow]:
    names = [c[0] for c in CONFIGS]
    rows: list[HistoryRow] = []
    for i in range(HISTORY):
        run = one_run(rng, noise, machine_offsets(rng, noise), {}, names)
        rows += rows_of(combine(SPEC, [run]).configs, i)
    return rows


def trial(args: Trial) -> tuple[bool, int, int, int, bool]:
    """(failed on unchanged, regressed, judged, config runs, caught within two commits)."""
    policy_name, cv, share, fixed, scenario, seed, declared = args
    policy: Policy = (
        functools.partial(policy_confirm, declared=declared)
        if policy_name == "confirm"
        else policy_runs(1 if policy_name == "one run" else fixed)
    )
    noise = Noise(cv, share)
    rng = random.Random(seed)
    history = start_history(random.Random(seed), noise)
    if scenario == "unchanged":
        out = policy(rng, noise, history, {})
        return out.failed, out.regressed, out.judged, out.config_runs, False
    pick = random.Random(seed + 1)
    if scenario == "throughput":
        change = {pick.choice(CONFIGS)[0]: 0.75}
    else:
        change = {pick.choice(CONFIGS[1:])[0]: 0.80}
    first = policy(rng, noise, history, change)
    if first.failed:
        return False, 0, 0, first.config_runs, True
    second = policy(rng, noise, history + rows_of(first.kpis, HISTORY), change)
    return False, 0, 0, first.config_runs + second.config_runs, second.failed


@functools.lru_cache(maxsize=200_000)
def _cached_split(
    values: tuple[float, ...], window: int, p: float
) -> tuple[list[float], list[float]]:
    return split_at_change(values, VerdictSettings(window=window, change_point_p=p))


def _split(history: Sequence[float], settings: VerdictSettings) -> tuple[list[float], list[float]]:
    return _cached_split(tuple(history), settings.window, settings.change_point_p)


def _init() -> None:
    # the same history is judged by every policy and every look: find its change once
    history_module.split_at_change = _split


def cell(
    pool: ProcessPoolExecutor, policy: str, cv: float, share: float, args: argparse.Namespace
) -> str:
    """One row of the table: the same seeds for every policy (common random numbers)."""

    def run(scenario: str, n: int, offset: int) -> list[tuple[bool, int, int, int, bool]]:
        seed = args.seed * 10**6 + offset
        trials = [
            (policy, cv, share, args.fixed_runs, scenario, seed + i, args.declared_share)
            for i in range(n)
        ]
        return list(pool.map(trial, trials, chunksize=10))

    unchanged = run("unchanged", args.trials, 0)
    tput = run("throughput", args.drops, 500_000)
    speed = run("speedup", args.drops, 700_000)
    failures = sum(u[0] for u in unchanged)
    regressed, judgements = sum(u[1] for u in unchanged), sum(u[2] for u in unchanged)
    runs = statistics.fmean(u[3] / len(CONFIGS) for u in unchanged)
    caught_t = sum(t[4] for t in tput) / len(tput)
    caught_s = sum(s[4] for s in speed) / len(speed)
    return (
        f"| {failures}/{len(unchanged)} = {failures / len(unchanged):.1%} "
        f"| {regressed}/{judgements} = {regressed / judgements:.3%} "
        f"| {caught_t:.0%} | {caught_s:.0%} | {runs:.2f} |"
    )


HEADER = (
    "| false failures per unchanged run | per KPI judgement "
    "| -25% throughput caught in 2 commits | -20% speedup caught in 2 commits "
    "| runs per config per commit |"
)


# ----------------------------------------------------------------------------- paired
# The reference noise model of the paired designs, on the log scale, per config, for the run
# in slot s of job j at develop commit t:
#   log throughput = change [arm B] + drift(t) + allocation(j) + within(j, s) + slope(j) * s
#                    + warm-up(j) [s == 0]
# the allocation new for every job (which nodes, which GPUs), the within-allocation part new
# for every run, a slow drift over commits (an AR(1) with sd 1.5% and correlation 0.9 per
# commit), a drift within the job of slope ~ N(0, 0.5%) per run and a first-run effect; the
# allocation's variance is what is left of the total CV's. Time to accuracy moves inversely
# with throughput plus 3% of its own, test accuracy varies by 0.002, GPU memory by 0.5%.
DRIFT_SD, DRIFT_RHO, SLOPE_SD = 0.015, 0.9, 0.005
TTA_SD, ACCURACY_SD, MEMORY_SD = math.log1p(0.03**2) ** 0.5, 0.002, math.log1p(0.005**2) ** 0.5
WARMUP_COST = 0.25  # the unmeasured warm-up run counted as a quarter run, as the reference


def _log_sd(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


@dataclass(frozen=True)
class PairedNoise:
    total_cv: float
    within_cv: float
    warmup_mu: float = 0.0  # the first run's effect in a job (mean, sd of the log)
    warmup_sd: float = 0.0

    @property
    def within(self) -> float:
        return _log_sd(self.within_cv)

    @property
    def allocation(self) -> float:
        rest = _log_sd(self.total_cv) ** 2 - self.within**2 - DRIFT_SD**2 - self.warmup_sd**2
        if rest <= 0:
            raise ValueError(f"within-allocation CV {self.within_cv} leaves no allocation part")
        return math.sqrt(rest)


def slot_order(pairs: int, warmup: bool) -> list[tuple[int, str]]:
    """(pair, arm) of each run in a paired job: W(A) | A B | B A | A B | B A (pair 0: W)."""
    order = [(0, "a")] if warmup else []
    for p in range(1, pairs + 1):
        order += [(p, "a"), (p, "b")] if p % 2 else [(p, "b"), (p, "a")]
    return order


def paired_job(
    rng: random.Random,
    noise: PairedNoise,
    drift: Mapping[str, float],
    change: Change,
    *,
    pairs: int,
    warmup: bool,
) -> dict[str, tuple[PairKpis, ...]]:
    """One paired job of every config: each its own allocation, ``pairs`` pairs."""
    out = {}
    for name, gpus, ps, level in CONFIGS:
        allocation = noise.allocation * rng.gauss(0, 1)
        slope = SLOPE_SD * rng.gauss(0, 1)
        arms: dict[tuple[int, str], ConfigKpis] = {}
        for slot, (p, arm) in enumerate(slot_order(pairs, warmup)):
            log = drift[name] + allocation + noise.within * rng.gauss(0, 1) + slope * slot
            if slot == 0:
                log += noise.warmup_mu + noise.warmup_sd * rng.gauss(0, 1)
            factor = change.get(name, 1.0) if arm == "b" else 1.0
            throughput = level * factor * math.exp(log)
            arms[p, arm] = ConfigKpis(
                name=name,
                gpus=gpus,
                status=ConfigStatus.OK,
                throughput=throughput,
                time_to_accuracy_s=600.0 * level / throughput * math.exp(TTA_SD * rng.gauss(0, 1)),
                test_accuracy=0.76 + ACCURACY_SD * rng.gauss(0, 1),
                trainer_gpu_memory_mib=15000.0 * math.exp(MEMORY_SD * rng.gauss(0, 1)),
                pserver_gpu_memory_mib=(
                    3000.0 * math.exp(MEMORY_SD * rng.gauss(0, 1)) if ps else None
                ),
                problems=(),
                converged=True,
                pservers=ps,
            )
        out[name] = tuple(PairKpis(p, arms[p, "a"], arms[p, "b"]) for p in range(1, pairs + 1))
    return out


def paired_run_kpis(pairs: Mapping[str, Sequence[PairKpis]], index: int) -> RunKpis:
    """The run's KPIs as the collector gives them: each config's pairs so far, its own
    values B's mean over them (speedup against the base config's)."""
    longest = max(len(own) for own in pairs.values())
    runs = [{n: own[i].b for n, own in pairs.items() if i < len(own)} for i in range(longest)]
    run = combine(SPEC, runs)
    configs = tuple(dataclasses.replace(c, pairs=tuple(pairs[c.name])) for c in run.configs)
    sha, base = f"{index:040x}", f"{index + 1:040x}"
    return dataclasses.replace(run, configs=configs, sha=sha, base_sha=base)


def drift_paths(rng: random.Random, commits: int) -> list[dict[str, float]]:
    """Each config's slow drift at each develop commit."""
    level = {name: DRIFT_SD * rng.gauss(0, 1) for name, *_ in CONFIGS}
    out = []
    for _ in range(commits):
        out.append(dict(level))
        step = DRIFT_SD * (1 - DRIFT_RHO**2) ** 0.5
        level = {n: DRIFT_RHO * v + step * rng.gauss(0, 1) for n, v in level.items()}
    return out


def paired_history(
    rng: random.Random, noise: PairedNoise, drifts: Sequence[Mapping[str, float]], warmup: bool
) -> list[HistoryRow]:
    """The branch's paired history: a push's paired job per commit, unchanged, each its
    first pair's d per KPI (first_pair_d, as the collector records it)."""
    rows = []
    for t in range(HISTORY):
        run = paired_run_kpis(paired_job(rng, noise, drifts[t], {}, pairs=1, warmup=warmup), t)
        base = run.config(run.base_config or "")
        for c in run.configs:
            by_kpi = {row.kpi: row for row in rows_of([c], t)}
            for kpi, d in first_pair_d(c, base).items():
                rows.append(dataclasses.replace(by_kpi[kpi], paired_d=d))
    return rows


@dataclass
class PairedOutcome:
    failed: bool
    runs_per_config: float
    disagrees: bool  # the final evaluation and the looks' decisions differ


def paired_commit(
    rng: random.Random,
    noise: PairedNoise,
    rows: list[HistoryRow],
    change: Change,
    settings: VerdictSettings,
    *,
    drift: Mapping[str, float],
) -> PairedOutcome:
    """One commit's paired job, looked at after every pair as the collector does (each
    config that goes on runs its next pair), then the final evaluation."""
    paired = settings.paired
    assert paired is not None
    job = paired_job(rng, noise, drift, change, pairs=paired.max_pairs, warmup=paired.warmup)
    ran = dict.fromkeys(job, 1)
    going = set(job)
    look_failed = False
    for look in range(1, paired.max_pairs + 1):
        run = paired_run_kpis({n: job[n][: ran[n]] for n in job}, HISTORY)
        for name in sorted(going):
            decision = judge_look(run, rows, settings, name, look)
            if decision.stop:
                going.discard(name)
                look_failed |= decision.outcome is LookOutcome.FAIL
        if not going:
            break
        for name in going:
            ran[name] += 1
    final = evaluate_paired(run, rows, settings, SPEC.accuracy_tolerance)
    failed = final.verdict.state is State.FAILURE
    runs = 2 * statistics.fmean(ran.values()) + (WARMUP_COST if paired.warmup else 0.0)
    return PairedOutcome(failed, runs, failed != look_failed)


# max pairs, total CV, within-allocation CV, warm-up effect (mu, sd), scenario, seed
PairedTrial = tuple[int, float, float, float, float, str, int]


def paired_trial(args: PairedTrial) -> tuple[bool, float, bool]:
    """(failed, runs per config, looks and final disagree) of one commit."""
    max_pairs, total, within, warm_mu, warm_sd, scenario, seed = args
    noise = PairedNoise(total, within, warm_mu, warm_sd)
    settings = VerdictSettings(paired=PairedSettings(max_pairs=max_pairs))
    rng = random.Random(seed)
    drifts = drift_paths(rng, HISTORY + 1)
    rows = paired_history(rng, noise, drifts, warmup=True)
    pick = random.Random(seed + 1)
    change: Change = {}
    if scenario == "throughput":
        change = {pick.choice(CONFIGS)[0]: 0.75}
    elif scenario == "speedup":
        change = {pick.choice(CONFIGS[1:])[0]: 0.80}
    out = paired_commit(rng, noise, rows, change, settings, drift=drifts[HISTORY])
    return out.failed, out.runs_per_config, out.disagrees


def paired_cell(
    pool: ProcessPoolExecutor, max_pairs: int, total: float, within: float, args: argparse.Namespace
) -> str:
    def run(scenario: str, n: int, offset: int) -> list[tuple[bool, float, bool]]:
        seed = args.seed * 10**6 + offset
        warm_mu, warm_sd = args.warmup_effect
        trials = [
            (max_pairs, total, within, warm_mu, warm_sd, scenario, seed + i) for i in range(n)
        ]
        return list(pool.map(paired_trial, trials, chunksize=10))

    unchanged = run("unchanged", args.trials, 0)
    tput = run("throughput", args.drops, 500_000)
    speed = run("speedup", args.drops, 700_000)
    failures = sum(u[0] for u in unchanged)
    runs = statistics.fmean(u[1] for u in unchanged)
    dropped = statistics.fmean(t[1] for t in tput)
    caught_t, caught_s = sum(t[0] for t in tput), sum(s[0] for s in speed)
    disagree = sum(x[2] for x in unchanged + tput + speed)
    return (
        f"| {failures}/{len(unchanged)} = {failures / len(unchanged):.2%} "
        f"| {caught_t}/{len(tput)} = {caught_t / len(tput):.1%} "
        f"| {caught_s}/{len(speed)} = {caught_s / len(speed):.1%} "
        f"| {runs:.2f} ({dropped:.2f}) | {disagree} |"
    )


def paired_main(args: argparse.Namespace) -> None:
    warm_mu, warm_sd = args.warmup_effect
    print(
        f"seed matrix {', '.join(c[0] for c in CONFIGS)}; all KPIs enforced; paired "
        f"history of {HISTORY} pushes; false-failure rate 1% per run; warm-up run's effect "
        f"N({warm_mu:g}, {warm_sd:g}) on the log; runs per config count the warm-up as "
        f"{WARMUP_COST:g} run\n"
    )
    print(
        "| total CV | within-allocation CV | design | false failures per unchanged run "
        "| -25% throughput caught at the first commit | -20% speedup caught at the first "
        "commit | runs per config per commit (with a -25% throughput drop) "
        "| final verdict unlike the looks' |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with ProcessPoolExecutor(args.workers, initializer=_init) as pool:
        for total in args.cv:
            for within in args.within:
                for max_pairs in args.max_pairs:
                    order = " | ".join(
                        "".join(arm.upper() for _, arm in slot_order(max_pairs, False)[i : i + 2])
                        for i in range(0, 2 * max_pairs, 2)
                    )
                    design = f"paired W-{order}".replace("|", "\\|")
                    row = paired_cell(pool, max_pairs, total, within, args)
                    print(f"| {total:.0%} | {within:.0%} | {design} {row}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="unchanged runs per row")
    parser.add_argument("--drops", type=int, default=200, help="regressions per row and kind")
    parser.add_argument("--machine-share", type=float, default=0.5)
    parser.add_argument(
        "--declared-share",
        type=float,
        default=0.0,
        help="the suite's confirm.machine_share in the confirm policy (what it assumes)",
    )
    parser.add_argument("--fixed-runs", type=int, default=3)
    parser.add_argument("--cv", type=float, nargs="+", default=[0.03, 0.10, 0.18])
    parser.add_argument(
        "--curve",
        type=int,
        nargs="*",
        default=[],
        metavar="K",
        help="then, at the last CV: k runs per commit for each K, at machine share 0 and the "
        "given one (the trade-off between GPU cost and what is caught)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--paired",
        action="store_true",
        help="the paired designs instead: A/B on one allocation, looks after each pair",
    )
    parser.add_argument(
        "--within",
        type=float,
        nargs="+",
        default=[0.03, 0.05],
        help="paired: the within-allocation CV (the rest of --cv is the allocation's)",
    )
    parser.add_argument("--max-pairs", type=int, nargs="+", default=[4, 2])
    parser.add_argument(
        "--warmup-effect",
        type=float,
        nargs=2,
        default=[0.0, 0.0],
        metavar=("MU", "SD"),
        help="paired: the first run of a job's effect on the log of its throughput",
    )
    parser.add_argument("--smoke", action="store_true", help="a few trials: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.drops, args.cv, args.workers = 20, 5, [0.10], 1
        args.within, args.max_pairs = args.within[:1], args.max_pairs[:1]
    print("command: python bench/verdict_simulation.py " + " ".join(sys.argv[1:]))
    if args.paired:
        paired_main(args)
        return
    print(
        f"seed matrix {', '.join(c[0] for c in CONFIGS)}; all KPIs enforced; {HISTORY} runs "
        f"of history; false-failure rate {ONE_RUN.false_failure_rate:.0%} per run; "
        f"machine share of the variance {args.machine_share:.0%} (confirm assumes "
        f"{args.declared_share:.0%})\n"
    )
    print(f"| CV | policy {HEADER}")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with ProcessPoolExecutor(args.workers, initializer=_init) as pool:
        for cv in args.cv:
            for name, key in (
                ("one run", "one run"),
                ("confirm", "confirm"),
                (f"{args.fixed_runs} runs", "k"),
            ):
                print(
                    f"| {cv:.0%} | {name} {cell(pool, key, cv, args.machine_share, args)}",
                    flush=True,
                )
        if args.curve:
            cv = args.cv[-1]
            print(f"\n| CV | machine share | runs per commit {HEADER}")
            print("| --- | --- | --- | --- | --- | --- | --- | --- |")
            for share in sorted({0.0, args.machine_share}):
                for k in args.curve:
                    row = cell(
                        pool, "k", cv, share, argparse.Namespace(**{**vars(args), "fixed_runs": k})
                    )
                    print(f"| {cv:.0%} | {share:.0%} | {k} {row}", flush=True)


if __name__ == "__main__":
    main()
