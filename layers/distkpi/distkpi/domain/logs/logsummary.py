"""What one training log says, reduced while it streams by (bounded whatever its length)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Level(IntEnum):
    """How much a throughput report covers; a log's highest level present wins."""

    ITERATION = 0
    SUMMARY = 1
    PASS = 2


@dataclass
class RunningMean:
    """Mean of a stream of reports, dropping the first (warm-up) when there are two or more."""

    count: int = 0
    first: float = 0.0
    total: float = 0.0
    values_after_warmup: list[float] = field(default_factory=list)

    MAX_KEPT = 10_000

    def add(self, value: float) -> None:
        if self.count == 0:
            self.first = value
        elif len(self.values_after_warmup) < self.MAX_KEPT:
            self.values_after_warmup.append(value)
        self.count += 1
        self.total += value

    @property
    def mean(self) -> float | None:
        if self.count == 0:
            return None
        if self.count == 1:
            return self.first
        return (self.total - self.first) / (self.count - 1)


@dataclass(frozen=True)
class EvalPoint:
    accuracy: float
    time_s: float | None


@dataclass
class LogSummary:
    throughput: dict[Level, RunningMean] = field(default_factory=dict)
    per_gpu_throughput: RunningMean = field(default_factory=RunningMean)
    explicit_total: float | None = None
    accuracy_by_pass: dict[int, float] = field(default_factory=dict)
    last_accuracy: float | None = None
    accuracy_frontier: list[EvalPoint] = field(default_factory=list)
    run_start_s: float | None = None
    converge_speed_s: float | None = None
    # what in the log says its process died (a traceback, a fatal signal); None: nothing
    crash: str | None = None
    problem_counts: dict[str, int] = field(default_factory=dict)

    def note(self, problem: str) -> None:
        self.problem_counts[problem] = self.problem_counts.get(problem, 0) + 1

    @property
    def problems(self) -> list[str]:
        return [p if n == 1 else f"{p} ({n} times)" for p, n in self.problem_counts.items()]

    def add_throughput(self, value: float, level: Level) -> None:
        self.throughput.setdefault(level, RunningMean()).add(value)

    def add_accuracy(self, value: float, pass_num: int | None, time_s: float | None) -> None:
        if pass_num is not None:
            self.accuracy_by_pass[pass_num] = value
        self.last_accuracy = value
        improves = not self.accuracy_frontier or value > self.accuracy_frontier[-1].accuracy
        if time_s is not None and improves:
            self.accuracy_frontier.append(EvalPoint(value, time_s))

    def mark_start(self, time_s: float) -> None:
        if self.run_start_s is None or time_s < self.run_start_s:
            self.run_start_s = time_s

    def best_throughput(self) -> tuple[float, Level] | None:
        """The log's throughput: the mean at the highest level that reported."""
        for level in sorted(self.throughput, reverse=True):
            mean = self.throughput[level].mean
            if mean is not None:
                return mean, level
        return None

    def samples(self) -> list[float]:
        """Within-run throughput samples (after warm-up) at the level that wins."""
        best = self.best_throughput()
        if best is None:
            return []
        running = self.throughput[best[1]]
        return list(running.values_after_warmup) or [running.first]

    def first_time_reaching(self, target: float) -> float | None:
        for point in self.accuracy_frontier:
            if point.accuracy >= target:
                return point.time_s
        return None

    def accuracy_at(self, pass_num: int) -> float | None:
        return self.accuracy_by_pass.get(pass_num, self.last_accuracy)
