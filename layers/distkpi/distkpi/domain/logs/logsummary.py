"""What one training log says, reduced while it streams by (bounded whatever its length).

Plain data only (numbers, strings, lists, dicts, enums), so that a summary can be stored and
read back: what parsing needs to know (direction, warm-up, declared metrics) is settled
before a log is read, in ``logformats.ParseSettings``.

The readers (readers/) emit what a line measures as named ``Observation``s; ``LogSummary.observe``
is the one place they are folded in: a name of ``FOLDS`` into the summary's own field, any
other name (a KPI of the catalogue measured by a reader of its own) into ``observed``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from distkpi.domain.accuracy import Accuracy, Direction, Target, dominates, reaches
from distkpi.domain.patterns import Per

WARMUP_SHARE = 0.05
MAX_KEPT = 10_000
MAX_EPOCHS = 100_000
MAX_PARTS_FRONTIER = 100


class Level(IntEnum):
    """How much a throughput report covers; a log's highest level present wins."""

    ITERATION = 0
    # one report over a log interval of several iterations, by the training loop's own
    # timing (Megatron's iteration line): preferred to a per-step timer in the same log
    INTERVAL = 1
    SUMMARY = 2
    PASS = 3


def warmup_count(count: int, warmup_reports: int | None) -> int:
    """Reports dropped before averaging: the suite's number, else the first 5% (rounded up)
    and at least the first; never all of them."""
    if count <= 1:
        return 0
    share = max(1, math.ceil(count * WARMUP_SHARE - 1e-9))
    dropped = warmup_reports if warmup_reports is not None else share
    return min(dropped, count - 1)


@dataclass
class RunningMean:
    """Mean of a stream of reports after its warm-up (warmup_count), in bounded memory: the
    first MAX_KEPT reports are kept, the rest only summed. Reports given with the seconds
    they cover (a rate and its step's time) average as total work over total time,
    sum(rate x seconds) / sum(seconds), so that a step timed short weighs as little as it
    lasted."""

    per: Per = Per.PROCESS
    warmup_reports: int | None = None
    count: int = 0
    total: float = 0.0
    kept: list[float] = field(default_factory=list)
    # with seconds: the sum of rate x seconds, of the seconds, and each kept report's seconds
    work: float = 0.0
    seconds: float = 0.0
    kept_seconds: list[float] = field(default_factory=list)

    def add(self, value: float, seconds: float | None = None) -> None:
        if len(self.kept) < MAX_KEPT:
            self.kept.append(value)
            if seconds is not None:
                self.kept_seconds.append(seconds)
        self.count += 1
        self.total += value
        if seconds is not None:
            self.work += value * seconds
            self.seconds += seconds

    @property
    def dropped(self) -> int:
        return min(warmup_count(self.count, self.warmup_reports), len(self.kept))

    @property
    def mean(self) -> float | None:
        if self.count == 0:
            return None
        dropped = self.dropped
        if self.kept_seconds and len(self.kept_seconds) == len(self.kept):
            work = math.fsum(
                v * t for v, t in zip(self.kept[:dropped], self.kept_seconds[:dropped], strict=True)
            )
            seconds = self.seconds - math.fsum(self.kept_seconds[:dropped])
            if seconds > 0:
                return (self.work - work) / seconds
        return (self.total - math.fsum(self.kept[:dropped])) / (self.count - dropped)

    @property
    def values_after_warmup(self) -> list[float]:
        return self.kept[self.dropped :]


class Observation(NamedTuple):
    """One figure a reader read off a line it claimed: ``name`` says which (a key of FOLDS,
    else a catalogue KPI's own name), ``value`` in ``unit`` (converted to the summary's, as
    _CONVERSIONS says), ``step`` the training step or pass it belongs to (None: the line names
    none), ``per`` what it counts. Some figures say more: ``level`` how much a throughput
    covers, ``seconds`` the time a rate covers (its weight), ``kind`` which of several
    figures it is (memory's "max reserved"; an accuracy's named part, of the evaluation
    ``part_of`` names), ``time_s`` when an evaluation ended."""

    name: str
    value: Any  # a number; an evaluation's accuracy may be an object of named parts
    unit: str
    step: int | None = None
    per: Per | None = None
    level: Level | None = None
    seconds: float | None = None
    kind: str | None = None
    time_s: float | None = None
    part_of: str | None = None


# the names the summary folds into fields of its own, with the unit it keeps each in
THROUGHPUT = "throughput"  # samples/s at its level
THROUGHPUT_PER_GPU = "throughput_per_gpu"  # samples/s of one card (Horovod's `per GPU`)
THROUGHPUT_TOTAL = "throughput_total"  # samples/s the log states for the whole job
TOKENS_PER_S = "tokens_per_s"
STEP_TIME_S = "step_time_s"
TFLOPS_PER_GPU = "tflops_per_gpu"
MFU = "mfu"
TRAINING_LOSS = "loss"
GPU_MEMORY = "gpu_memory_mib"  # the framework's own peak for its rank
TEST_ACCURACY = "test_accuracy"

# a unit a reader may emit in -> the unit kept, and how (the log's own unit, converted once)
_CONVERSIONS: dict[tuple[str, str], Callable[[float], float]] = {
    ("GiB", "MiB"): lambda v: v * 1024.0,
    ("%", ""): lambda v: v / 100.0,
}


@dataclass(frozen=True)
class EvalPoint:
    accuracy: Accuracy
    time_s: float | None


@dataclass
class LogSummary:
    direction: Direction = Direction.HIGHER
    warmup_reports: int | None = None
    # the KPIs the suite's own patterns state; the built-in readers are not asked for them
    declared: tuple[str, ...] = ()
    throughput: dict[Level, RunningMean] = field(default_factory=dict)
    per_gpu_throughput: RunningMean = field(default_factory=lambda: RunningMean(Per.CARD))
    explicit_total: float | None = None
    accuracy_by_pass: dict[int, Accuracy] = field(default_factory=dict)
    last_accuracy: Accuracy | None = None
    # the timed evaluations no earlier one is at least as good as in every part
    accuracy_frontier: list[EvalPoint] = field(default_factory=list)
    run_start_s: float | None = None
    # MLLOG: when a run_stop of status success says the benchmark's target was reached
    run_stop_s: float | None = None
    converge_speed_s: float | None = None
    # MLLOG's samples per epoch and each epoch's start and stop, for a throughput when the
    # log states none of its own
    train_samples: float | None = None
    epoch_starts: dict[int, float] = field(default_factory=dict)
    epoch_stops: dict[int, float] = field(default_factory=dict)
    # what in the log says its process died (a traceback, a fatal signal); None: nothing
    crash: str | None = None
    # what the crash raised: the last line of its traceback or Paddle's error summary
    crash_cause: str | None = None
    # the run stopped without reaching its target (MLLOG run_stop status aborted)
    aborted: bool = False
    problem_counts: dict[str, int] = field(default_factory=dict)
    # what language-model training logs state besides samples/s: each report's value, its
    # warm-up dropped as throughput's is; `per` says what a tokens/s or memory figure counts
    tokens_per_s: RunningMean = field(default_factory=lambda: RunningMean(Per.CARD))
    step_time_s: RunningMean = field(default_factory=lambda: RunningMean(Per.JOB))
    tflops_per_gpu: RunningMean = field(default_factory=lambda: RunningMean(Per.CARD))
    mfu: RunningMean = field(default_factory=lambda: RunningMean(Per.CARD))
    # the training loss by step (the first MAX_KEPT steps), the last one, and how many
    # reported losses were NaN or infinite
    loss_by_step: dict[int, float] = field(default_factory=dict)
    last_loss: float | None = None
    nonfinite_losses: int = 0
    first_nonfinite_step: int | None = None
    # the iterations the framework itself reports as NaN (Megatron's per-interval counts,
    # summed), and those it skipped (an fp16 loss-scale overflow skips one without any
    # divergence, so they are kept apart): the highest cumulative count or the sum
    nan_iterations: int = 0
    skipped_iterations: int = 0
    # the job's shape as the log states it, for tokens <-> samples and FLOP counts
    seq_len: int | None = None
    global_batch: int | None = None
    # the peak GPU memory the framework reports for its own rank (MiB), and which figure
    # it is (e.g. "max allocated", "max reserved")
    framework_memory_mib: float | None = None
    framework_memory_kind: str | None = None
    # the role a suite's declared gpu_memory pattern gives the figure (None: the log's own)
    framework_memory_role: str | None = None
    # MLPerf's submission_benchmark; its rules (mlperf_rules.py) fix the quality metric's
    # direction, per named part where there are two (Stable Diffusion's FID and CLIP)
    benchmark: str | None = None
    part_directions: dict[str, Direction] = field(default_factory=dict)
    # the evaluation whose parts arrive on separate lines (their epoch/step), still open
    parts_key: str | None = None
    # what readers of a KPI the summary has no field for observed, by the KPI's name
    observed: dict[str, RunningMean] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for running in (
            self.per_gpu_throughput,
            self.tokens_per_s,
            self.step_time_s,
            self.tflops_per_gpu,
            self.mfu,
        ):
            running.warmup_reports = self.warmup_reports

    def observe(self, seen: Observation) -> None:
        """Fold what a reader observed into the summary (FOLDS, else ``observed``)."""
        fold = FOLDS.get(seen.name)
        if fold is None:
            running = self.observed.get(seen.name)
            if running is None:
                running = self.observed[seen.name] = RunningMean(
                    seen.per or Per.PROCESS, self.warmup_reports
                )
            running.add(seen.value, seen.seconds)
            return
        unit, into = fold
        value = seen.value
        if seen.unit != unit:
            convert = _CONVERSIONS.get((seen.unit, unit))
            if convert is None:  # a reader's mistake, never the log's
                raise ValueError(f"{seen.name} is kept in {unit!r}, not {seen.unit!r}")
            value = convert(value)
        into(self, seen, value)

    def add_loss(self, step: int | None, value: float) -> None:
        """A NaN or infinite loss is counted (and its first step kept), never stored as a
        value: a summary holds only numbers a KPI can be."""
        if not math.isfinite(value):
            self.nonfinite_losses += 1
            if self.first_nonfinite_step is None:
                self.first_nonfinite_step = step
            return
        self.last_loss = value
        if step is not None and (step in self.loss_by_step or len(self.loss_by_step) < MAX_KEPT):
            self.loss_by_step[step] = value

    def add_framework_memory(self, mib: float, kind: str, role: str | None = None) -> None:
        if self.framework_memory_mib is None or mib > self.framework_memory_mib:
            self.framework_memory_mib = mib
            self.framework_memory_kind = kind
            self.framework_memory_role = role

    def add_accuracy_part(
        self, name: str, value: float, key: str, pass_num: int | None, time_s: float | None
    ) -> None:
        """One named part of an evaluation whose parts are logged one per line (MLPerf's
        Stable Diffusion: FID, then CLIP, of the same step): parts of the same ``key`` make
        one evaluation, timed by its last part."""
        last = self.last_accuracy
        if self.parts_key == key and isinstance(last, dict) and name not in last:
            merged = {**last, name: value}
            if self.accuracy_frontier and self.accuracy_frontier[-1].accuracy is last:
                self.accuracy_frontier.pop()
            self.add_accuracy(merged, pass_num, time_s)
            return
        self.parts_key = key
        self.add_accuracy({name: value}, pass_num, time_s)

    def note(self, problem: str) -> None:
        self.problem_counts[problem] = self.problem_counts.get(problem, 0) + 1

    @property
    def problems(self) -> list[str]:
        return [p if n == 1 else f"{p} ({n} times)" for p, n in self.problem_counts.items()]

    def add_throughput(
        self, value: float, level: Level, per: Per = Per.PROCESS, *, declared: bool = False
    ) -> None:
        if "throughput" in self.declared and not declared:
            return
        running = self.throughput.get(level)
        if running is None:
            running = self.throughput[level] = RunningMean(per, self.warmup_reports)
        running.add(value)

    def add_accuracy(
        self, value: Accuracy, pass_num: int | None, time_s: float | None, *, declared: bool = False
    ) -> None:
        if "test_accuracy" in self.declared and not declared:
            return
        if pass_num is not None:
            self.accuracy_by_pass[pass_num] = value
        self.last_accuracy = value
        if time_s is None or self._dominated(value):
            return
        self.accuracy_frontier.append(EvalPoint(value, time_s))

    def _dominated(self, value: Accuracy) -> bool:
        """Whether a kept evaluation reaches whatever ``value`` reaches. Numbers improve
        monotonically along the frontier, so only the last is asked; objects of parts are
        compared with each kept one, and at most MAX_PARTS_FRONTIER are kept."""
        frontier = self.accuracy_frontier
        if not isinstance(value, dict):
            last = next((p for p in reversed(frontier) if not isinstance(p.accuracy, dict)), None)
            return last is not None and dominates(last.accuracy, value, self.direction)
        if len(frontier) >= MAX_PARTS_FRONTIER:
            return True
        parts = self.part_directions
        return any(dominates(p.accuracy, value, self.direction, parts) for p in frontier)

    def mark_start(self, time_s: float) -> None:
        if self.run_start_s is None or time_s < self.run_start_s:
            self.run_start_s = time_s

    def mark_epoch(self, epoch: int, time_s: float, stop: bool) -> None:
        marks = self.epoch_stops if stop else self.epoch_starts
        if epoch in marks or len(marks) < MAX_EPOCHS:
            marks[epoch] = time_s

    def _epoch_durations(self) -> list[float]:
        """Each timed epoch's duration in epoch order, the first left out when there are more."""
        durations = [
            self.epoch_stops[e] - start
            for e, start in sorted(self.epoch_starts.items())
            if e in self.epoch_stops and self.epoch_stops[e] > start
        ]
        return durations[1:] if len(durations) > 1 else durations

    def epoch_throughput(self) -> tuple[float, list[float]] | None:
        """train_samples x epochs / their total duration, and each epoch's own rate."""
        durations = self._epoch_durations()
        if self.train_samples is None or not durations:
            return None
        rate = self.train_samples * len(durations) / math.fsum(durations)
        return rate, [self.train_samples / d for d in durations[:MAX_KEPT]]

    def best_throughput(self) -> tuple[float, Level] | None:
        """The log's throughput: the mean at the highest level that reported."""
        for level in sorted(self.throughput, reverse=True):
            mean = self.throughput[level].mean
            if mean is not None:
                return mean, level
        return None

    def throughput_per(self) -> Per | None:
        """What the winning throughput counts (None when the log reports none)."""
        best = self.best_throughput()
        return self.throughput[best[1]].per if best is not None else None

    def samples(self) -> list[float]:
        """Within-run throughput samples (after warm-up) at the level that wins."""
        best = self.best_throughput()
        if best is None:
            return []
        running = self.throughput[best[1]]
        return running.values_after_warmup or running.kept[-1:]

    def first_time_reaching(self, target: Target) -> float | None:
        for point in self.accuracy_frontier:
            if reaches(point.accuracy, target, self.direction, self.part_directions):
                return point.time_s
        return None

    def accuracy_at(self, pass_num: int) -> Accuracy | None:
        return self.accuracy_by_pass.get(pass_num, self.last_accuracy)


def _running(name: str) -> Callable[[LogSummary, Observation, Any], None]:
    """A fold into one of the summary's running means, which takes the figure's ``per``."""

    def fold(summary: LogSummary, seen: Observation, value: Any) -> None:
        running: RunningMean = getattr(summary, name)
        if seen.per is not None:
            running.per = seen.per
        running.add(value, seen.seconds)

    return fold


def _throughput(summary: LogSummary, seen: Observation, value: Any) -> None:
    summary.add_throughput(value, seen.level or Level.ITERATION, seen.per or Per.PROCESS)


def _total(summary: LogSummary, _seen: Observation, value: Any) -> None:
    summary.explicit_total = value


def _loss(summary: LogSummary, seen: Observation, value: Any) -> None:
    summary.add_loss(seen.step, value)


def _memory(summary: LogSummary, seen: Observation, value: Any) -> None:
    summary.add_framework_memory(value, seen.kind or "")


def _accuracy(summary: LogSummary, seen: Observation, value: Any) -> None:
    if seen.kind is not None and seen.part_of is not None:
        summary.add_accuracy_part(seen.kind, value, seen.part_of, seen.step, seen.time_s)
        return
    summary.add_accuracy(value, seen.step, seen.time_s)


# observation name -> (the unit the summary keeps it in, how it is folded in)
FOLDS: dict[str, tuple[str, Callable[[LogSummary, Observation, Any], None]]] = {
    THROUGHPUT: ("samples/s", _throughput),
    THROUGHPUT_PER_GPU: ("samples/s", _running("per_gpu_throughput")),
    THROUGHPUT_TOTAL: ("samples/s", _total),
    TOKENS_PER_S: ("tokens/s", _running("tokens_per_s")),
    STEP_TIME_S: ("s", _running("step_time_s")),
    TFLOPS_PER_GPU: ("TFLOP/s", _running("tflops_per_gpu")),
    MFU: ("", _running("mfu")),
    TRAINING_LOSS: ("", _loss),
    GPU_MEMORY: ("MiB", _memory),
    TEST_ACCURACY: ("", _accuracy),
}
