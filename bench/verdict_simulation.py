"""Does the verdict cry wolf, and does it catch real regressions? A simulation.

    python bench/verdict_simulation.py [--streams 10] [--commits 100] [--trials 300]

Synthetic develop histories of throughput (and speedup) with run-to-run noise of a given
coefficient of variation (the old PaddlePaddle CE saw 18% on unchanged code; 3% is a
well-kept cluster). Every commit is judged exactly as the collector judges it (baseline
after the last change point, t-interval or tolerance fallback) and then joins the history,
as a push to develop would.
- false failures: streams of unchanged commits; the share judged `regressed`.
- caught: a commit that drops throughput 25% (or speedup 20%) lands on top of 40 unchanged
  runs and stays; the share of trials where commit 1 or commit 2 is judged `regressed`.
"""

from __future__ import annotations

import argparse
import random

from distkpi.domain.changepoints import baseline_after_change
from distkpi.domain.judging import KpiVerdict, VerdictSettings, judge_kpi

SETTINGS = VerdictSettings()
START = 40


def run_value(rng: random.Random, level: float, cv: float) -> float:
    return level * max(0.05, 1 + cv * rng.gauss(0, 1))


def judged_regressed(kpi: str, value: float, history: list[float]) -> bool:
    baseline = baseline_after_change(history, SETTINGS)
    return judge_kpi("sim", kpi, value, baseline, SETTINGS).verdict is KpiVerdict.REGRESSED


def false_failures(cv: float, streams: int, commits: int, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    failures = total = 0
    for _ in range(streams):
        history = [run_value(rng, 1000, cv) for _ in range(START)]
        for _ in range(commits):
            value = run_value(rng, 1000, cv)
            failures += judged_regressed("throughput", value, history)
            total += 1
            history.append(value)
    return failures, total


def caught(kpi: str, drop: float, cv: float, trials: int, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    hits = 0
    level = 1000.0 if kpi == "throughput" else 20.0
    for _ in range(trials):
        history = [run_value(rng, level, cv) for _ in range(START)]
        for _ in range(2):
            value = run_value(rng, level * (1 - drop), cv)
            if judged_regressed(kpi, value, history):
                hits += 1
                break
            history.append(value)
    return hits, trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(
        f"command: python bench/verdict_simulation.py --streams {args.streams} "
        f"--commits {args.commits} --trials {args.trials} --seed {args.seed}"
    )
    print(
        f"settings: confidence {SETTINGS.confidence}, window {SETTINGS.window}, "
        f"fallback below {SETTINGS.min_history} values at ±{SETTINGS.default_tolerance:.0%}, "
        f"change points at p < {SETTINGS.change_point_p}"
    )
    print(
        f"{'CV':>4}  {'false failures / unchanged commit':>34}  {'-25% throughput caught':>22}  "
        f"{'-20% speedup caught':>20}"
    )
    for cv in (0.03, 0.18):
        ff, total = false_failures(cv, args.streams, args.commits, args.seed)
        tp, n = caught("throughput", 0.25, cv, args.trials, args.seed)
        sp, m = caught("speedup", 0.20, cv, args.trials, args.seed + 1)
        print(
            f"{cv:4.0%}  {ff:>6}/{total:<6} = {ff / total:6.2%}{'':>12}  "
            f"{tp / n:>22.1%}  {sp / m:>20.1%}"
        )


if __name__ == "__main__":
    main()
