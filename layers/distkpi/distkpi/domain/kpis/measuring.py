"""What language-model training logs give a config beyond the seed's KPIs, measured once
per config from its trainers' summaries and the run's training settings:

- tokens/s of the whole job: the logs' figures combined as throughput is (per card: their
  mean times the config's GPUs; per process: their sum; per node: each trainer's mean
  summed; per job: the first's);
- step time: the median of every trainer's steps after the warm-up;
- TFLOP/s per GPU: the framework's own figure, else FLOPs per token (the suite's
  ``flops_per_token``, or ``model_flops`` by the 6N + 12 L H Q T rule) times tokens/s per
  GPU; a framework's figure more than 10% off what its own step time gives (when the FLOPs
  per step are known) is a problem naming both;
- MFU: the framework's own, else TFLOP/s per GPU over the dense peak of the GPU the node
  detected at the suite's ``dtype`` (gpu_peaks.py); above 1 is a problem naming both;
- loss: the final finite training loss of the first trainer that reports one;
- with the suite's ``quality: loss``, the steps and the time to the target loss: the first
  reported step whose loss reaches the target (in the run's accuracy_direction), and that
  step times the mean reported step time, warm-up included (training logs time steps, not
  the clock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from distkpi.domain import averages
from distkpi.domain.accuracy import Direction, at_least_as_good
from distkpi.domain.contracts import ConfigSpec, RunSpec
from distkpi.domain.kpis.gpu_peaks import gpu_model, peak_tflops
from distkpi.domain.logs.logsummary import LogSummary, RunningMean
from distkpi.domain.patterns import Per

# a framework's TFLOP/s this far from what its own step time gives is doubted
TFLOPS_AGREEMENT = 0.10


@dataclass(frozen=True)
class Figures:
    tokens_per_s: float | None = None
    step_time_s: float | None = None
    tflops_per_gpu: float | None = None
    mfu: float | None = None
    loss: float | None = None
    seq_len: int | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class LossTarget:
    """The training loss against the run's target (suite ``quality: loss``)."""

    steps: int | None = None
    time_s: float | None = None
    # False: never reached; None: the logs cannot tell
    reached: bool | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measuring:
    """One config's trainers as the catalogue's ``measure`` functions see them."""

    spec: ConfigSpec
    # each trainer log's node rank and summary, in rank order
    trainers: tuple[tuple[int, LogSummary], ...]
    run: RunSpec | None = None
    hardware: str | None = None

    @cached_property
    def figures(self) -> Figures:
        return _figures(self)

    @cached_property
    def loss_target(self) -> LossTarget:
        return _loss_target(self)

    @property
    def by_loss(self) -> bool:
        return self.run is not None and self.run.quality == "loss"


def _combined(spec: ConfigSpec, reports: Sequence[tuple[int, float, Per]]) -> float:
    per = reports[0][2]
    values = [value for _, value, _ in reports]
    if per is Per.JOB:
        return values[0]
    if per is Per.CARD:
        return averages.fmean(values) * spec.gpus
    if per is Per.NODE:
        by_node: dict[int, list[float]] = {}
        for rank, value, _ in reports:
            by_node.setdefault(rank, []).append(value)
        return sum(averages.fmean(v) for v in by_node.values())
    return sum(values)


def _tokens(m: Measuring, problems: list[str]) -> float | None:
    reports = [
        (rank, mean, s.tokens_per_s.per)
        for rank, s in m.trainers
        if (mean := s.tokens_per_s.mean) is not None
    ]
    return _of_trainers(m, reports, "tokens/s", problems)


def _of_trainers(
    m: Measuring,
    reports: Sequence[tuple[int, float, Per]],
    what: str,
    problems: list[str] | None = None,
) -> float | None:
    """The trainers' means (rank, mean, what one counts) combined by what they count; None,
    with the problem where ``problems`` takes one, when none reported, when they count it
    differently, or when some of the trainers counting per process report none (their sum
    would be a part of the job's)."""
    if not reports:
        return None
    pers = sorted({per.value for _, _, per in reports})
    why = None
    if len(pers) > 1:
        why = f"{what} not given: trainer logs count it differently ({', '.join(pers)})"
    elif reports[0][2] is Per.PROCESS and len(reports) < len(m.trainers):
        silent = len(m.trainers) - len(reports)
        why = f"{what} not given: {silent} trainer log(s) report none (a partial sum)"
    if why is not None:
        if problems is not None:
            problems.append(why)
        return None
    return _combined(m.spec, reports)


def _mean_of(runs: Sequence[RunningMean]) -> float | None:
    means = [mean for r in runs if (mean := r.mean) is not None]
    return averages.fmean(means) if means else None


def _seq_len(m: Measuring) -> int | None:
    """Tokens per sample: the log's, else the config's layout's, else the suite's."""
    stated = next((s.seq_len for _, s in m.trainers if s.seq_len), None)
    return stated or m.spec.seq_len or (m.run.seq_len if m.run is not None else None)


def _flops_per_token(m: Measuring, seq_len: int | None) -> float | None:
    if m.run is None:
        return None
    if m.run.flops_per_token is not None:
        return m.run.flops_per_token
    if m.run.model_flops is not None and seq_len is not None:
        return m.run.model_flops.per_token(seq_len)
    return None


def _agreement(
    m: Measuring, framework: float, flops: float, seq_len: int, step: float
) -> str | None:
    """A framework's TFLOP/s per GPU against its own step time: the FLOPs of one step (its
    global batch of sequences) over the step time and the config's GPUs."""
    batch = next((s.global_batch for _, s in m.trainers if s.global_batch), m.spec.global_batch)
    if batch is None:
        return None
    expected = flops * batch * seq_len / step / m.spec.gpus / 1e12
    if expected <= 0 or abs(framework / expected - 1) <= TFLOPS_AGREEMENT:
        return None
    return (
        f"the framework's {framework:.4g} TFLOP/s per GPU disagrees with its own step time: "
        f"{flops:.4g} FLOPs/token x {batch} x {seq_len} tokens in {step:.4g} s on "
        f"{m.spec.gpus} GPU(s) is {expected:.4g} TFLOP/s per GPU"
    )


def _mfu(m: Measuring, tflops: float | None, problems: list[str]) -> float | None:
    framework = _mean_of([s.mfu for _, s in m.trainers])
    if framework is not None:
        mfu = framework
        source = "the framework's own"
    else:
        dtype = m.run.dtype if m.run is not None else None
        model = gpu_model(m.hardware)
        if tflops is None or dtype is None or model is None:
            return None
        peak = peak_tflops(model, dtype)
        if peak is None:
            problems.append(f"MFU unknown: no {dtype} peak known for {model} (gpu_peaks.py)")
            return None
        mfu = tflops / peak
        source = f"{tflops:.4g} TFLOP/s per GPU over the {model}'s {dtype} peak of {peak:g}"
    if mfu > 1:
        problems.append(f"MFU {mfu:.3g} is above 1 ({source}): check the FLOP count or the dtype")
    return mfu


def _figures(m: Measuring) -> Figures:
    problems: list[str] = []
    tokens = _tokens(m, problems)
    steps = [v for _, s in m.trainers for v in s.step_time_s.values_after_warmup]
    step = averages.median(steps) if steps else None
    seq_len = _seq_len(m)
    flops = _flops_per_token(m, seq_len)
    framework = _mean_of([s.tflops_per_gpu for _, s in m.trainers])
    tflops = framework
    if tflops is None and flops is not None and tokens is not None:
        tflops = flops * tokens / m.spec.gpus / 1e12
    if framework is not None and flops is not None and seq_len is not None and step:
        disagreement = _agreement(m, framework, flops, seq_len, step)
        if disagreement:
            problems.append(disagreement)
    mfu = _mfu(m, tflops, problems)
    loss = next((s.last_loss for _, s in m.trainers if s.last_loss is not None), None)
    return Figures(tokens, step, tflops, mfu, loss, seq_len, tuple(problems))


def _loss_target(m: Measuring) -> LossTarget:
    run = m.run
    if run is None or run.quality != "loss":
        return LossTarget()
    target = run.target_accuracy
    if not isinstance(target, float | int):
        return LossTarget(problems=("quality: loss needs a single number as the target",))
    curve = next((s.loss_by_step for _, s in m.trainers if s.loss_by_step), None)
    if curve is None:
        return LossTarget(problems=("time to the target loss unknown: no log reports a loss",))
    direction = run.accuracy_direction
    reached = next(
        (step for step in sorted(curve) if at_least_as_good(curve[step], target, direction)),
        None,
    )
    if reached is None:
        best = (min if direction is Direction.LOWER else max)(curve.values())
        never = f"the training loss never reached the target {target:g} (best {best:.4g})"
        return LossTarget(reached=False, problems=(never,))
    times = [v for _, s in m.trainers for v in s.step_time_s.kept]
    if not times:
        why = f"time to the target loss unknown: step {reached} reached it, but no step is timed"
        return LossTarget(reached, None, True, (why,))
    return LossTarget(reached, reached * averages.fmean(times), True)


def observed(name: str) -> Callable[[Measuring], float | None]:
    """The measure of a KPI that a reader of its own observes as ``name`` (kept in each
    summary's ``observed``): the trainers' means combined as tokens/s's are, by what they
    count; None when none observed it, they count it differently, or some count per process
    and others none."""

    def measure(m: Measuring) -> float | None:
        reports = [
            (rank, mean, running.per)
            for rank, s in m.trainers
            if (running := s.observed.get(name)) is not None and (mean := running.mean) is not None
        ]
        return _of_trainers(m, reports, name)

    return measure


def steps_to_target(m: Measuring) -> float | None:
    steps = m.loss_target.steps
    return None if steps is None else float(steps)


def tokens_per_s(m: Measuring) -> float | None:
    return m.figures.tokens_per_s


def step_time_s(m: Measuring) -> float | None:
    return m.figures.step_time_s


def tflops_per_gpu(m: Measuring) -> float | None:
    return m.figures.tflops_per_gpu


def mfu(m: Measuring) -> float | None:
    return m.figures.mfu


def loss(m: Measuring) -> float | None:
    return m.figures.loss
