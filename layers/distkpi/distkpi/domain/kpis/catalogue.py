"""The KPI catalogue: one definition per KPI, the one place a KPI is added to.

Everything that lists KPIs reads it: a config's KPI record (``ConfigKpis.to_json`` and
back), the judging rules (direction, log scale, family, applicability, never reaching the
target), the text, markdown and HTML tables, the site's labels, the verdict's short names,
the history rows and the kpis JSON Schema (a test holds the schema to it).

A measured KPI that the seed's engine does not compute itself names its ``measure``: a
function of what one config's logs said (``measuring.Measuring``); the engine calls it for
every config. Adding a KPI is one definition here and, where no reader states it yet, the
reader that does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from distkpi.domain.kpis import measuring
from distkpi.domain.kpis.measuring import Measuring


class _Config(Protocol):
    """What a rule of applicability may ask of a config's KPIs."""

    @property
    def pservers(self) -> int: ...


@dataclass(frozen=True)
class Kpi:
    name: str  # the key in every record, JSON and suite (`verdict: enforced:`)
    unit: str  # what one unit counts ("" for a ratio)
    label: str  # a table's row, a chart's title
    short: str  # the verdict's headline ("tput -12%")
    fmt: str  # how a table prints its value
    # which way is better: True more, False less, None the run's (accuracy_direction)
    higher_is_better: bool | None
    # rates, times and memory vary by a factor: judged on the log scale
    log_scale: bool = True
    # measured per config from its logs, or derived against the base config
    derived: bool = False
    # judged against its history at all (accuracy delta is judged across configs instead)
    judged: bool = True
    # judged as one test with this KPI (efficiency is speedup over a constant)
    family: str | None = None
    # a ratio to the base config's throughput: 1 by definition for the base config
    scaling: bool = False
    # beyond a limit the suite sets it regresses whatever its history (loss alignment)
    limited: bool = False
    # measured against the base config, so the base config itself has none
    not_of_base: bool = False
    # whether a config can report it (pserver GPU memory needs a pserver)
    applies: Callable[[_Config], bool] | None = None
    # a config that never reached the target regresses it (it has no value then)
    never_reached: bool = False
    # a convergence KPI: a config whose training loss went NaN or Inf regresses it
    convergence: bool = False
    # its value is dropped when the config is not ok (a failed config's partial throughput)
    null_unless_ok: bool = False
    # an LLM KPI: a table shows its row, and history and judging list it, only where some
    # config measured it (or a suite enforces it): the seed's runs read as they did
    optional: bool = False
    # its table row is labelled by the run's target ("time to acc >= 0.75 (s)")
    names_target: bool = False
    # how the engine measures it (None: the seed's engine computes it itself)
    measure: Callable[[Measuring], float | None] | None = None
    # the JSON Schema bound of its value
    bound: tuple[str, float] | None = ("minimum", 0)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": ["number", "null"]}
        if self.bound is not None:
            out[self.bound[0]] = self.bound[1]
        out["description"] = f"{self.label}; " + (
            "derived against the base config" if self.derived else "measured"
        )
        return out

    def applicable(self, config: _Config) -> bool:
        return self.applies is None or self.applies(config)


def _has_pservers(config: _Config) -> bool:
    return config.pservers > 0


CATALOGUE: tuple[Kpi, ...] = (
    Kpi(
        "throughput",
        "samples/s",
        "throughput (samples/s)",
        "tput",
        ".1f",
        True,
        null_unless_ok=True,
        bound=("exclusiveMinimum", 0),
    ),
    Kpi(
        "speedup",
        "",
        "speedup",
        "speedup",
        ".2f",
        True,
        derived=True,
        scaling=True,
        bound=("exclusiveMinimum", 0),
    ),
    Kpi(
        "efficiency",
        "",
        "efficiency",
        "eff",
        ".2f",
        True,
        derived=True,
        scaling=True,
        family="speedup",
        bound=("exclusiveMinimum", 0),
    ),
    Kpi(
        "test_accuracy",
        "",
        "test accuracy",
        "acc",
        ".4f",
        None,
        log_scale=False,
        convergence=True,
    ),
    Kpi(
        "time_to_accuracy_s",
        "s",
        "time to accuracy (s)",
        "TTA",
        ".0f",
        False,
        never_reached=True,
        convergence=True,
        names_target=True,
    ),
    Kpi("trainer_gpu_memory_mib", "MiB", "trainer GPU memory (MiB)", "trainer mem", ".0f", False),
    Kpi(
        "pserver_gpu_memory_mib",
        "MiB",
        "pserver GPU memory (MiB)",
        "ps mem",
        ".0f",
        False,
        applies=_has_pservers,
    ),
    Kpi(
        "accuracy_delta",
        "",
        "accuracy delta",
        "acc Δ",
        "+.4f",
        None,
        log_scale=False,
        derived=True,
        judged=False,
        bound=None,
    ),
    Kpi(
        "steps_to_accuracy",
        "steps",
        "steps to the target loss",
        "steps",
        ".0f",
        False,
        optional=True,
        never_reached=True,
        convergence=True,
        measure=measuring.steps_to_target,
    ),
    Kpi(
        "tokens_per_s",
        "tokens/s",
        "tokens/s",
        "tok/s",
        ".1f",
        True,
        optional=True,
        null_unless_ok=True,
        measure=measuring.tokens_per_s,
        bound=("exclusiveMinimum", 0),
    ),
    Kpi(
        "step_time_s",
        "s",
        "step time (s)",
        "step",
        ".4g",
        False,
        optional=True,
        measure=measuring.step_time_s,
        bound=("exclusiveMinimum", 0),
    ),
    Kpi(
        "tflops_per_gpu",
        "TFLOP/s",
        "TFLOP/s per GPU",
        "TFLOP/s",
        ".1f",
        True,
        optional=True,
        measure=measuring.tflops_per_gpu,
    ),
    Kpi("mfu", "", "MFU", "MFU", ".3f", True, optional=True, measure=measuring.mfu),
    Kpi(
        "loss",
        "",
        "final training loss",
        "loss",
        ".4g",
        False,
        log_scale=False,
        optional=True,
        convergence=True,
        measure=measuring.loss,
        bound=None,
    ),
    Kpi(
        "loss_alignment",
        "",
        "loss vs base (max rel. diff)",
        "loss align",
        ".2%",
        False,
        log_scale=False,
        derived=True,
        optional=True,
        limited=True,
        not_of_base=True,
    ),
    Kpi(
        "golden_loss",
        "",
        "loss vs golden (max rel. diff)",
        "golden",
        ".2%",
        False,
        log_scale=False,
        optional=True,
        limited=True,
    ),
)

# the order of a table's KPI rows (after the config's GPUs and status, before its cost):
# the seed's as it printed them, then every other KPI in the catalogue's order
_SEED_TABLE = (
    "speedup",
    "efficiency",
    "throughput",
    "time_to_accuracy_s",
    "trainer_gpu_memory_mib",
    "pserver_gpu_memory_mib",
    "test_accuracy",
    "accuracy_delta",
)


# views of CATALOGUE, read when asked (so that a KPI added to it shows everywhere)
def kpi(name: str) -> Kpi:
    return next(k for k in CATALOGUE if k.name == name)


def judged() -> tuple[Kpi, ...]:
    """The KPIs judged against their history, in the order judgements list them."""
    return tuple(k for k in CATALOGUE if k.judged)


def table_order() -> tuple[Kpi, ...]:
    rest = tuple(k for k in CATALOGUE if k.name not in _SEED_TABLE)
    return (*(kpi(name) for name in _SEED_TABLE), *rest)
