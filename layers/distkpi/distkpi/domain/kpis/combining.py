"""Several runs of one commit as one set of KPIs: per config the mean of its runs, with how
many there were and each run's value, so that the verdict judges the mean of k runs and the
history keeps one row per config per commit.

A confirmation run holds only the configs in doubt, so speedup and efficiency are taken
against the base config's mean throughput over all the runs that have it, for every run."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from distkpi.domain.contracts import RunSpec
from distkpi.domain.kpis import catalogue
from distkpi.domain.kpis.engine import (
    MIXED,
    ConfigKpis,
    ConfigStatus,
    RunKpis,
    against_base,
    run_quality_direction,
    without_kpis,
)

# the KPIs a config measures itself (speedup, efficiency, accuracy delta are the base's)
MEASURED = tuple(k.name for k in catalogue.CATALOGUE if not k.derived)


def _mean_of(kpi: str, runs: Sequence[ConfigKpis]) -> tuple[float | None, tuple[float, ...]]:
    values = tuple(v for r in runs if (v := r.value(kpi)) is not None)
    if len(values) < len(runs):  # a run that could not measure it leaves the mean unknown
        return None, values
    return math.fsum(values) / len(values), values  # statistics.fmean, without its imports


def merged_runs(runs: Sequence[ConfigKpis]) -> ConfigKpis:
    """One config's own KPIs (before the base config's) over its runs."""
    if len(runs) == 1:
        return runs[0]
    spent = [r.gpu_hours for r in runs if r.gpu_hours is not None]
    gpu_hours = sum(spent) if spent else None  # what the commit cost, all runs together
    broken = [r for r in runs if r.status is not ConfigStatus.OK]
    if broken:
        return replace(broken[0], runs=len(runs), gpu_hours=gpu_hours)
    hardware = {r.hardware for r in runs}
    means: dict[str, Any] = {}
    per_run: dict[str, tuple[float, ...]] = {}
    for kpi in MEASURED:
        means[kpi], per_run[kpi] = _mean_of(kpi, runs)
    converged = [r.converged for r in runs]
    problems = tuple(dict.fromkeys(p for r in runs for p in r.problems))
    return replace(
        runs[0].with_values(means),
        problems=problems,
        throughput_samples=(),
        converged=False if False in converged else (None if None in converged else True),
        diverged=any(r.diverged for r in runs),
        runs=len(runs),
        run_values={kpi: values for kpi, values in per_run.items() if values},
        hardware=hardware.pop() if len(hardware) == 1 else MIXED,
        gpu_hours=gpu_hours,
    )


def combine(spec: RunSpec, runs: Sequence[Mapping[str, ConfigKpis]]) -> RunKpis:
    """The KPIs of one commit's runs, first run first; ``spec`` is the first run's, with
    every config and the base. With one run this is exactly domain.kpis.run_kpis."""
    base_spec = spec.base_config
    merged = {
        c.name: merged_runs(found)
        if (found := [run[c.name] for run in runs if c.name in run])
        else without_kpis(c)
        for c in spec.configs
    }
    base = merged.get(base_spec.name)
    configs = []
    for kpis in merged.values():
        judged = against_base(kpis, base, base_spec, spec.alignment)
        if kpis.runs > 1 and base is not None and base.throughput and judged.speedup:
            speedups = tuple(v / base.throughput for v in kpis.run_values.get("throughput", ()))
            ratio = base.gpus / kpis.gpus  # efficiency is speedup over the GPU ratio
            judged = replace(
                judged,
                run_values={
                    **kpis.run_values,
                    "speedup": speedups,
                    "efficiency": tuple(s * ratio for s in speedups),
                },
            )
        configs.append(judged)
    direction = run_quality_direction(spec, configs)
    return RunKpis(spec.run_id, spec.model, base_spec.name, tuple(configs), direction)
