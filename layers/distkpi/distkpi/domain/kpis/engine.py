"""KPI maths (docs/architecture.md): per config from its parsed files, then across the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from distkpi.domain.accuracy import (
    Accuracy,
    Direction,
    Target,
    at_least_as_good,
    describe,
    describe_target,
    headline,
)
from distkpi.domain.contracts import Alignment, ConfigSpec, NodeManifest, Role, RunSpec
from distkpi.domain.kpis import catalogue
from distkpi.domain.kpis.golden import GoldenCurve, against_golden
from distkpi.domain.kpis.measuring import Measuring
from distkpi.domain.logs.gpumemory import GpuMemorySummary
from distkpi.domain.logs.logsummary import LogSummary, Per
from distkpi.domain.logs.mlperf_rules import direction_problem
from distkpi.domain.untrusted import neutral

# a config's hardware when a node could not read its own, and when its trainers disagree:
# unknown is compared only with unknown, mixed with nothing
UNKNOWN = "unknown"
MIXED = "mixed"
# what a config stores of its problems: a config's item, and the run's evaluation of every
# config, must fit DynamoDB's 400 KB item whatever its nodes wrote
MAX_STORED_PROBLEMS = 20
MAX_PROBLEM_CHARS = 400
# an efficiency this far above 1 is a measurement to doubt, not a result
SUPER_LINEAR = 1.05
SUPER_LINEAR_PROBLEM = "super-linear scaling: check the base config's throughput"
NOT_REACHED = "did not reach the target"
# the training loss's first steps a config keeps for the loss-curve alignment across
# configs (its stored item stays small whatever the run's length)
MAX_CURVE_STEPS = 500


class ConfigStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    INCOMPLETE = "incomplete"


@dataclass(frozen=True)
class ParsedLog:
    path: str
    role: Role
    rank: int
    summary: LogSummary


@dataclass(frozen=True)
class ParsedGpuMemory:
    path: str
    role: Role
    rank: int
    summary: GpuMemorySummary


@dataclass
class ConfigEvidence:
    """Everything known about one config: the manifests that arrived and their parsed files."""

    spec: ConfigSpec
    manifests: Mapping[int, NodeManifest]
    logs: Sequence[ParsedLog] = ()
    gpu_memory: Sequence[ParsedGpuMemory] = ()
    invalid_nodes: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # files a manifest names that could not be read or parsed: the config cannot be judged
    unusable_files: list[str] = field(default_factory=list)
    # the suite's golden loss curve (golden.py), when it has one and the run folder holds it
    golden: GoldenCurve | None = None


@dataclass(frozen=True)
class ConfigKpis:
    name: str
    gpus: int
    status: ConfigStatus
    throughput: float | None
    time_to_accuracy_s: float | None
    test_accuracy: float | None
    trainer_gpu_memory_mib: float | None
    pserver_gpu_memory_mib: float | None
    problems: tuple[str, ...]
    speedup: float | None = None
    efficiency: float | None = None
    accuracy_delta: float | None = None
    throughput_samples: tuple[float, ...] = ()
    # whether accuracy reached the target: False means it never did; None, the logs cannot say
    converged: bool | None = None
    # how many runs of one commit these KPIs are the mean of, and each KPI's value per run
    # (only when there are several: a commit confirmed by re-running)
    runs: int = 1
    run_values: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    # <instance type>/<GPU model> of its trainers (hardware.py: UNKNOWN, MIXED)
    hardware: str | None = None
    # every reported node's GPUs times its wall time, setup included
    gpu_hours: float | None = None
    # every named part of the test accuracy when the evaluation has parts (test_accuracy is
    # then the part the target names first)
    test_accuracy_parts: Mapping[str, float] | None = None
    # its parameter servers: without any, pserver GPU memory is not a KPI it can report
    pservers: int = 0
    # a paired run's KPIs per pair and arm (A the base, B the head); the config's own values
    # are then B's mean over the pairs
    pairs: tuple[PairKpis, ...] = ()

    # the catalogue's KPIs that are not fields of their own (catalogue.Kpi.measure), those
    # with a value
    measured: Mapping[str, float | None] = field(default_factory=dict)
    # a trainer's training loss went NaN or Inf, or its framework counted NaN iterations:
    # an enforced convergence KPI regresses
    diverged: bool = False
    # the first trainer's training loss by step (the first MAX_CURVE_STEPS reported), and
    # against the base config's: whether within the suite's alignment, and the step of the
    # largest difference (loss_alignment is its size)
    loss_curve: Mapping[int, float] = field(default_factory=dict)
    loss_alignment_step: int | None = None
    # the catalogue's limited KPIs beyond the limit the suite sets (catalogue.Kpi.limited)
    beyond_limits: tuple[str, ...] = ()
    # its parallel layout where the suite states it (ConfigSpec.layout: tp, pp, dp, ...)
    layout: Mapping[str, int] = field(default_factory=dict)
    # the direction a trainer's log fixes for the run's quality metric where run.json states
    # none (MLPerf's submission_benchmark); None: the run's own
    quality_direction: Direction | None = None

    @property
    def aligned(self) -> bool | None:
        """Whether its loss curve is within the suite's alignment (None: not measured)."""
        if self.value("loss_alignment") is None:
            return None
        return "loss_alignment" not in self.beyond_limits

    def value(self, kpi: str) -> float | None:
        """Any catalogue KPI's value, a field of its own or measured."""
        if kpi in _FIELDS:
            found = getattr(self, kpi)
            return None if found is None else float(found)
        return self.measured.get(kpi)

    def with_values(self, values: Mapping[str, float | None]) -> ConfigKpis:
        """A copy with these catalogue KPIs set, wherever each is kept."""
        own = {k: v for k, v in values.items() if k in _FIELDS}
        measured = {**self.measured, **{k: v for k, v in values.items() if k not in _FIELDS}}
        measured = {k: v for k, v in measured.items() if v is not None}
        return replace(self, **own, measured=measured)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        paired = {"pairs": [p.to_json() for p in self.pairs]} if self.pairs else {}
        out: dict[str, Any] = {"gpus": self.gpus, "pservers": self.pservers}
        if self.layout:
            out["layout"] = dict(self.layout)
        out["status"] = self.status.value
        for kpi in catalogue.CATALOGUE:
            out[kpi.name] = self.value(kpi.name)
            if kpi.name == "test_accuracy":
                parts = self.test_accuracy_parts
                out["test_accuracy_parts"] = dict(parts) if parts is not None else None
        return (
            paired
            | out
            | {
                "loss_alignment_step": self.loss_alignment_step,
                "diverged": self.diverged,
                "problems": list(self.problems),
                "runs": self.runs,
                "hardware": self.hardware,
                "gpu_hours": self.gpu_hours,
            }
        )

    def to_record(self) -> dict[str, Any]:
        """to_json plus what only storage needs (within-run samples)."""
        return {
            **self.to_json(),
            "name": self.name,
            "throughput_samples": list(self.throughput_samples),
            "converged": self.converged,
            "beyond_limits": list(self.beyond_limits),
            "loss_curve": {str(step): loss for step, loss in self.loss_curve.items()},
            "run_values": {kpi: list(values) for kpi, values in self.run_values.items()},
            "pairs": [p.to_record() for p in self.pairs],
            "quality_direction": self.quality_direction and self.quality_direction.value,
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> ConfigKpis:
        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        kpis = {kpi.name: number(kpi.name) for kpi in catalogue.CATALOGUE}
        own = {k: v for k, v in kpis.items() if k in _FIELDS}
        return cls(
            name=str(data["name"]),
            gpus=int(data["gpus"]),
            pservers=int(data.get("pservers", 0)),
            status=ConfigStatus(data["status"]),
            **own,
            measured={k: v for k, v in kpis.items() if k not in _FIELDS and v is not None},
            diverged=bool(data.get("diverged", False)),
            loss_curve={int(k): float(v) for k, v in (data.get("loss_curve") or {}).items()},
            beyond_limits=tuple(str(k) for k in data.get("beyond_limits") or ()),
            layout={str(k): int(v) for k, v in (data.get("layout") or {}).items()},
            loss_alignment_step=(
                None
                if data.get("loss_alignment_step") is None
                else int(data["loss_alignment_step"])
            ),
            problems=tuple(str(p) for p in data.get("problems", ())),
            throughput_samples=tuple(float(v) for v in data.get("throughput_samples", ())),
            converged=_converged(data),
            runs=int(data.get("runs", 1)),
            hardware=None if data.get("hardware") is None else str(data["hardware"]),
            gpu_hours=number("gpu_hours"),
            test_accuracy_parts=_parts(data.get("test_accuracy_parts")),
            run_values={
                str(kpi): tuple(float(v) for v in values)
                for kpi, values in (data.get("run_values") or {}).items()
            },
            pairs=tuple(PairKpis.from_record(p, str(data["name"])) for p in data.get("pairs", ())),
            quality_direction=(
                None
                if data.get("quality_direction") is None
                else Direction(data["quality_direction"])
            ),
        )


_FIELDS = frozenset(f.name for f in fields(ConfigKpis))


@dataclass(frozen=True)
class PairKpis:
    """One pair of a paired run's config: arm A (the base commit) and arm B (the head), run
    one after the other on the same nodes."""

    pair: int
    a: ConfigKpis
    b: ConfigKpis
    # a suite with an alignment: whether B's training loss curve is A's (the same steps,
    # within the suite's max_rel_diff from its from_step), the largest relative difference
    # and its step (arms_loss_alignment); None: not measured
    aligned: bool | None = None
    loss_alignment: float | None = None
    loss_alignment_step: int | None = None

    def _alignment(self) -> dict[str, Any]:
        if self.aligned is None:
            return {}
        return {
            "aligned": self.aligned,
            "loss_alignment": self.loss_alignment,
            "loss_alignment_step": self.loss_alignment_step,
        }

    def to_json(self) -> dict[str, Any]:
        arms = {"a": self.a.to_json(), "b": self.b.to_json()}
        return {"pair": self.pair, **self._alignment(), **arms}

    def to_record(self) -> dict[str, Any]:
        """Without the arms' within-run samples and loss curves: a paired config is judged by
        its pairs, and its stored item stays small whatever its runs reported."""
        arms = {
            arm: getattr(self, arm).to_record() | {"throughput_samples": [], "loss_curve": {}}
            for arm in "ab"
        }
        return {"pair": self.pair, **self._alignment(), **arms}

    @classmethod
    def from_record(cls, data: Mapping[str, Any], name: str) -> PairKpis:
        a, b = (ConfigKpis.from_record({"name": name, **data[arm]}) for arm in ("a", "b"))
        aligned, diff, step = (data.get(k) for k in _PAIR_ALIGNMENT)
        return cls(
            int(data["pair"]),
            a,
            b,
            aligned=None if aligned is None else bool(aligned),
            loss_alignment=None if diff is None else float(diff),
            loss_alignment_step=None if step is None else int(step),
        )


_PAIR_ALIGNMENT = ("aligned", "loss_alignment", "loss_alignment_step")


def _parts(value: Any) -> dict[str, float] | None:
    if not isinstance(value, Mapping):
        return None
    return {str(k): float(v) for k, v in value.items()}


def _converged(data: Mapping[str, Any]) -> bool | None:
    """Stored records know it; older ones (and `distkpi kpis --json`) said it in a problem."""
    if "converged" in data:
        return None if data["converged"] is None else bool(data["converged"])
    if data.get("time_to_accuracy_s") is not None:
        return True
    problems = [str(p) for p in data.get("problems", ())]
    if any(p.startswith("accuracy never reached") or p == NOT_REACHED for p in problems):
        return False
    return None


@dataclass(frozen=True)
class RunKpis:
    run_id: str
    model: str
    base_config: str | None
    configs: tuple[ConfigKpis, ...]
    # how the run's quality metric improves: test_accuracy is judged in this direction
    accuracy_direction: Direction = Direction.HIGHER
    # a paired run's commits: B, the head (the run's sha), and A, its base
    sha: str | None = None
    base_sha: str | None = None

    def config(self, name: str) -> ConfigKpis:
        return next(c for c in self.configs if c.name == name)

    @property
    def gpu_hours(self) -> float | None:
        known = [c.gpu_hours for c in self.configs if c.gpu_hours is not None]
        return sum(known) if known else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunKpis:
        """The object to_json made (as `distkpi kpis --json` prints it)."""
        configs = tuple(
            ConfigKpis.from_record({**v, "name": k}) for k, v in data["configs"].items()
        )
        direction = Direction(data.get("accuracy_direction", Direction.HIGHER))
        return cls(
            data["run_id"],
            data["model"],
            data["base_config"],
            configs,
            direction,
            data.get("sha"),
            data.get("base_sha"),
        )

    def to_json(self) -> dict[str, Any]:
        paired = {"sha": self.sha, "base_sha": self.base_sha} if self.base_sha else {}
        return paired | {
            "run_id": self.run_id,
            "model": self.model,
            "base_config": self.base_config,
            "accuracy_direction": self.accuracy_direction.value,
            "gpu_hours": self.gpu_hours,
            "configs": {c.name: c.to_json() for c in self.configs},
        }


Problems = tuple[str, ...]


def _status(evidence: ConfigEvidence) -> tuple[ConfigStatus, Problems]:
    problems = [f"node {node}: {reason}" for node, reason in sorted(evidence.invalid_nodes.items())]
    failed = bool(problems) or bool(evidence.unusable_files)
    for node, manifest in sorted(evidence.manifests.items()):
        if manifest.problem:
            problems.append(f"node {node}: {manifest.problem}")
            failed = True
        elif manifest.exit_code != 0:
            problems.append(f"node {node} exited with code {manifest.exit_code}")
            failed = True
    reported = set(evidence.manifests) | set(evidence.invalid_nodes)
    missing = [n for n in range(evidence.spec.nodes) if n not in reported]
    if missing:
        problems.append(f"node(s) {', '.join(map(str, missing))} never reported")
    if failed:
        return ConfigStatus.FAILED, tuple(problems)
    return (ConfigStatus.INCOMPLETE if missing else ConfigStatus.OK), tuple(problems)


@dataclass(frozen=True)
class _Reported:
    log: ParsedLog
    value: float
    per: Per
    samples: tuple[float, ...]


def _reported(log: ParsedLog) -> _Reported | None:
    """A log's throughput and what it counts: its own reports at their highest level, else
    Horovod's per-GPU figure, else MLLOG's samples per epoch over the epochs' duration."""
    summary = log.summary
    best = summary.best_throughput()
    if best is not None:
        per = summary.throughput_per() or Per.PROCESS
        return _Reported(log, best[0], per, tuple(summary.samples()))
    per_gpu = summary.per_gpu_throughput.mean
    if per_gpu is not None:
        return _Reported(log, per_gpu, Per.CARD, ())
    epochs = summary.epoch_throughput()
    if epochs is not None:
        return _Reported(log, epochs[0], Per.JOB, tuple(epochs[1]))
    return None


def _combined(spec: ConfigSpec, reports: Sequence[_Reported]) -> tuple[float, float]:
    """The config's throughput from logs that all count the same way, and the factor from
    one log's samples to the config's: per card, their mean times the config's GPUs; per
    process, their sum; per node, each trainer's mean summed; per job, the first's."""
    per = reports[0].per
    values = [r.value for r in reports]
    if per is Per.JOB:
        return values[0], 1.0
    if per is Per.CARD:
        return sum(values) / len(values) * spec.gpus, float(spec.gpus)
    if per is Per.NODE:
        by_node: dict[int, list[float]] = {}
        for r in reports:
            by_node.setdefault(r.log.rank, []).append(r.value)
        return sum(sum(v) / len(v) for v in by_node.values()), 1.0
    return sum(values), 1.0


def _silent(trainers: Sequence[ParsedLog], reports: Sequence[_Reported]) -> list[ParsedLog]:
    """The logs whose silence makes a sum partial: per process, each log that reports
    nothing; per node, the logs of a trainer none of whose logs reports (per card and per job
    a silent log takes nothing away: the other logs' figure stands for it)."""
    per = reports[0].per
    if per is Per.PROCESS:
        reporting = {id(r.log) for r in reports}
        return [log for log in trainers if id(log) not in reporting]
    if per is Per.NODE:
        nodes = {r.log.rank for r in reports}
        return [log for log in trainers if log.rank not in nodes]
    return []


def _from_tokens(measuring: Measuring) -> float | None:
    """Samples/s from tokens/s, where the log or the suite states the tokens per sample."""
    figures = measuring.figures
    if figures.tokens_per_s is None or figures.seq_len is None:
        return None
    return figures.tokens_per_s / figures.seq_len


def _no_samples_why(measuring: Measuring) -> Problems:
    figures = measuring.figures
    if figures.tokens_per_s is None:
        return ("no throughput: no trainer log reports one",)
    if figures.seq_len is None:
        return (
            f"throughput (samples/s) unknown: the logs state {figures.tokens_per_s:.6g} tokens/s "
            "but no sequence length (the suite's seq_len)",
        )
    return ()


def _throughput(
    spec: ConfigSpec, trainers: Sequence[ParsedLog], measuring: Measuring
) -> tuple[tuple[float | None, tuple[float, ...]], bool, Problems]:
    """(the config's throughput, its within-run samples), whether the logs are inconsistent
    (some trainers report and others do not, or they count differently: the config fails),
    and why the throughput is missing."""
    totals = [log.summary.explicit_total for log in trainers if log.summary.explicit_total]
    if totals:
        return (totals[0], ()), False, ()
    if not trainers:
        return (None, ()), False, ("no trainer log",)
    reports = [r for log in trainers if (r := _reported(log)) is not None]
    if not reports:
        return (_from_tokens(measuring), ()), False, _no_samples_why(measuring)
    pers = sorted({r.per.value for r in reports})
    if len(pers) > 1:
        why = f"throughput not given: trainer logs count it differently ({', '.join(pers)})"
        return (None, ()), True, (why,)
    silent = _silent(trainers, reports)
    if silent:
        problems = [f"trainer {log.rank} ({log.path}): no throughput reported" for log in silent]
        problems.append("throughput not given: a sum over some trainers only would be partial")
        return (None, ()), True, tuple(problems)
    total, scale = _combined(spec, reports)
    # Per-sample totals only make sense when a single trainer log carries them.
    samples = tuple(v * scale for v in reports[0].samples) if len(trainers) == 1 else ()
    return (total, samples), False, ()


def _best_evaluation(logs: Sequence[ParsedLog], direction: Direction) -> Accuracy:
    best = logs[0].summary.accuracy_frontier[-1].accuracy
    for log in logs[1:]:
        candidate = log.summary.accuracy_frontier[-1].accuracy
        if at_least_as_good(headline(candidate, None), headline(best, None), direction):
            best = candidate
    return best


def _time_to_accuracy(
    trainers: Sequence[ParsedLog], target: Target, direction: Direction
) -> tuple[tuple[float | None, bool | None], Problems]:
    """(seconds to the target, whether it was reached: None when the logs cannot tell)."""
    if any(log.summary.aborted for log in trainers):  # MLLOG: the run stopped short of it
        return (None, False), (NOT_REACHED,)
    for log in trainers:
        if log.summary.converge_speed_s is not None:
            return (log.summary.converge_speed_s, True), ()
    starts = [log.summary.run_start_s for log in trainers if log.summary.run_start_s is not None]
    timed = [log for log in trainers if log.summary.accuracy_frontier]
    if not starts or not timed:
        absent = [
            what for what, none in (("run_start", not starts), ("evaluations", not timed)) if none
        ]
        missing = " and no timed ".join(absent)
        return (None, None), (f"time to accuracy unknown: the logs have no timed {missing}",)
    reached = [t for log in timed if (t := log.summary.first_time_reaching(target)) is not None]
    if not reached:
        best = describe(_best_evaluation(timed, direction))
        never = f"accuracy never reached the target {describe_target(target)} (best {best})"
        return (None, False), (never,)
    # an evaluation logged after a successful MLLOG run_stop (Stable Diffusion evaluates its
    # checkpoints offline) reached the target by run_stop: MLPerf's time to train ends there
    stops = [
        s.run_stop_s
        for log in timed
        if (s := log.summary).run_stop_s is not None and s.first_time_reaching(target) is not None
    ]
    end = min([*reached, *stops])
    return (max(0.0, end - min(starts)), True), ()


def _quality_direction(
    trainers: Sequence[ParsedLog], direction: Direction, run: RunSpec | None, target: Target
) -> tuple[Direction, Problems, bool]:
    """The direction the run's quality metric is read in, the problems, and whether they
    are an error: a log that fixes it (an MLPerf log's submission_benchmark, a perplexity
    line) is read in its own; run.json stating the contrary is an error naming both."""
    stated = run is None or run.direction_stated
    fixed = next((log for log in trainers if log.summary.direction is not direction), None)
    if fixed is not None:
        if not stated:
            return fixed.summary.direction, (), False
        summary = fixed.summary
        why = direction_problem(summary.benchmark, direction) or (
            f"accuracy_direction {direction} contradicts {fixed.path}, whose quality metric "
            f"is {summary.direction} is better"
        )
        return summary.direction, (why,), True
    parts = target.values() if isinstance(target, Mapping) else (target,)
    if not stated and direction is Direction.HIGHER and any(part > 1 for part in parts):
        why = (
            f"target_accuracy {describe_target(target)} is above 1, but run.json states no "
            "accuracy_direction and no log names a benchmark that fixes it: read as higher "
            "is better"
        )
        return direction, (why,), False
    return direction, (), False


@dataclass(frozen=True)
class _TestAccuracy:
    value: float | None
    parts: dict[str, float] | None
    problems: Problems


def _test_accuracy(
    trainers: Sequence[ParsedLog],
    accuracy_pass: int | None,
    target: Target,
    direction: Direction,
) -> _TestAccuracy:
    """The test accuracy of ``accuracy_pass`` as the log numbers it, else its last (a problem
    only where the log numbers other passes: a log that numbers none has no pass to miss)."""
    for log in trainers:
        summary = log.summary
        if summary.last_accuracy is None:
            continue
        problems: Problems = ()
        numbered = summary.accuracy_by_pass
        if accuracy_pass is not None and numbered and accuracy_pass not in numbered:
            problems = (f"no test accuracy for pass {accuracy_pass}; the last reported is used",)
        found = (
            summary.last_accuracy if accuracy_pass is None else summary.accuracy_at(accuracy_pass)
        )
        if found is None:
            continue
        parts = dict(found) if isinstance(found, dict) else None
        value = headline(found, target)
        numbers = parts.values() if parts is not None else (value,)
        if direction is Direction.HIGHER and not all(0.0 <= v <= 1.0 for v in numbers):
            return _TestAccuracy(
                None,
                None,
                (*problems, f"test accuracy {describe(found)} is outside [0, 1]; ignored"),
            )
        return _TestAccuracy(value, parts, problems)
    return _TestAccuracy(None, None, ("no test accuracy reported",))


def _peak_memory(
    evidence: ConfigEvidence, role: Role, expected: bool
) -> tuple[float | None, Problems]:
    """The role's peak GPU memory: nvidia-smi's samples, else the framework's own figure of
    its rank (each log's, the largest), saying which one it is when both exist."""
    peaks = [
        g.summary.peak_mib
        for g in evidence.gpu_memory
        if g.role == role and g.summary.peak_mib is not None
    ]
    own = [
        (log.summary.framework_memory_mib, log.summary.framework_memory_kind)
        for log in evidence.logs
        if log.role == role and log.summary.framework_memory_mib is not None
    ]
    framework = max(own, key=lambda x: x[0] or 0.0) if own else None
    if peaks:
        if framework is None:
            return max(peaks), ()
        said = f"{framework[0]:.0f} MiB ({framework[1] or 'its own figure'})"
        note = f"{role} GPU memory is nvidia-smi's peak; the framework's own says {said}"
        return max(peaks), (note,)
    if framework is not None:
        kind = framework[1] or "its own figure"
        note = f"{role} GPU memory is the framework's {kind} (no nvidia-smi samples)"
        return framework[0], (note,)
    if not expected:
        return None, ()
    rss = [
        m.peak_host_rss_mib
        for m in evidence.manifests.values()
        if m.peak_host_rss_mib is not None and any(f.role == role for f in m.files)
    ]
    host = f"; peak host RSS {max(rss):.0f} MiB, not GPU memory" if rss else ""
    return None, (f"no GPU memory samples for the {role}s (no GPU?){host}",)


def _hardware(evidence: ConfigEvidence) -> tuple[str | None, Problems]:
    """The trainers' hardware, and what could not be read or did not match."""
    trainers = evidence.spec.trainers
    problems = [
        f"node {node}: hardware: {m.hardware.problem}"
        for node, m in sorted(evidence.manifests.items())
        if m.hardware is not None and m.hardware.problem
    ]
    seen = {
        node: m.hardware.name
        for node, m in sorted(evidence.manifests.items())
        if node < trainers and m.hardware is not None
    }
    names = set(seen.values())
    if not names:
        return None, tuple(problems)
    if len(names) > 1:
        ran = ", ".join(f"node {node} {name}" for node, name in seen.items())
        problems.append(f"trainers ran on different hardware ({ran}); not compared with history")
        return MIXED, tuple(problems)
    (name,) = names
    return (UNKNOWN if UNKNOWN in name.split("/") else name), tuple(problems)


def _gpu_hours(evidence: ConfigEvidence) -> float | None:
    """GPUs each reported node asked for times its wall time: trainers first, pservers none."""
    spec = evidence.spec
    walls = [
        (spec.gpus_per_trainer if node < spec.trainers else 0) * m.wall_s
        for node, m in evidence.manifests.items()
        if m.wall_s is not None
    ]
    return sum(walls) / 3600 if walls else None


def _crashed(log: ParsedLog) -> str:
    """A crashed process's problem: what it raised (the log's own words, made neutral as any
    string from a log is) and what showed the crash."""
    where = f"{log.role} {log.rank} ({log.path}) crashed"
    if log.summary.crash_cause is None:
        return f"{where}: its log shows {log.summary.crash}"
    return f"{where}: {neutral(log.summary.crash_cause)} (the end of {log.summary.crash})"


def config_kpis(
    evidence: ConfigEvidence,
    target_accuracy: Target,
    accuracy_pass: int | None,
    direction: Direction = Direction.HIGHER,
    *,
    run: RunSpec | None = None,
) -> ConfigKpis:
    """One config's own KPIs; speedup, efficiency and accuracy delta come from run_kpis.
    ``run``: its training settings (sequence length, FLOPs, dtype) for the LLM KPIs."""
    spec = evidence.spec
    status, node_problems = _status(evidence)
    file_problems = [f"{log.path}: {p}" for log in evidence.logs for p in log.summary.problems]
    file_problems += [f"{g.path}: {p}" for g in evidence.gpu_memory for p in g.summary.problems]
    trainers = sorted((log for log in evidence.logs if log.role == "trainer"), key=lambda x: x.rank)
    crashes = [_crashed(log) for log in evidence.logs if log.summary.crash is not None]
    if crashes:  # even when its node exited 0, as Paddle's legacy launcher does
        status = ConfigStatus.FAILED
    stated_direction = direction
    direction, direction_problems, misdirected = _quality_direction(
        trainers, direction, run, target_accuracy
    )
    fixed_by_log = direction is not stated_direction
    if misdirected:
        status = ConfigStatus.FAILED
    hardware, hardware_problems = _hardware(evidence)
    measuring = Measuring(spec, tuple((log.rank, log.summary) for log in trainers), run, hardware)
    (throughput, samples), inconsistent, throughput_problems = _throughput(
        spec, trainers, measuring
    )
    if inconsistent:
        status = ConfigStatus.FAILED
    if status is not ConfigStatus.OK:
        throughput, samples = None, ()
    measured = {
        kpi.name: value
        for kpi in catalogue.CATALOGUE
        if kpi.measure is not None and (status is ConfigStatus.OK or not kpi.null_unless_ok)
        if (value := kpi.measure(measuring)) is not None
    }
    diverged, divergence = _divergence(trainers)
    if measuring.by_loss:
        by_loss = measuring.loss_target
        (tta, converged), tta_problems = (by_loss.time_s, by_loss.reached), by_loss.problems
    else:
        (tta, converged), tta_problems = _time_to_accuracy(trainers, target_accuracy, direction)
    accuracy = _test_accuracy(trainers, accuracy_pass, target_accuracy, direction)
    trainer_memory, trainer_memory_problems = _peak_memory(evidence, "trainer", True)
    pserver_memory, pserver_memory_problems = _peak_memory(evidence, "pserver", spec.pservers > 0)
    kpis = ConfigKpis(
        name=spec.name,
        gpus=spec.gpus,
        pservers=spec.pservers,
        status=status,
        throughput=throughput,
        throughput_samples=samples,
        time_to_accuracy_s=tta,
        converged=converged,
        test_accuracy=accuracy.value,
        test_accuracy_parts=accuracy.parts,
        trainer_gpu_memory_mib=trainer_memory,
        pserver_gpu_memory_mib=pserver_memory,
        problems=(
            *evidence.problems,
            *node_problems,
            *crashes,
            *direction_problems,
            *file_problems,
            *throughput_problems,
            *tta_problems,
            *accuracy.problems,
            *trainer_memory_problems,
            *pserver_memory_problems,
            *hardware_problems,
            *measuring.figures.problems,
            *divergence,
        ),
        hardware=hardware,
        gpu_hours=_gpu_hours(evidence),
        measured=measured,
        diverged=diverged,
        loss_curve=_loss_curve(trainers),
        layout=spec.layout,
        quality_direction=direction if fixed_by_log else None,
    )
    return _against_golden(kpis, evidence.golden)


def _against_golden(kpis: ConfigKpis, golden: GoldenCurve | None) -> ConfigKpis:
    """The config's loss curve against the suite's golden one: its largest relative
    difference from the golden mean as golden_loss, beyond its min..max a limit."""
    if golden is None or not kpis.loss_curve:
        return kpis
    check = against_golden(kpis.loss_curve, golden)
    if check is None:
        why = "golden curve: no step of the config's loss curve is in it"
        return replace(kpis, problems=(*kpis.problems, why))
    out = kpis.with_values({"golden_loss": check.largest})
    if not check.outside:
        return out
    first = check.outside[0]
    series = golden.loss
    low, high = (series.min or series.values)[first], (series.max or series.values)[first]
    why = (
        f"loss outside the golden curve at {len(check.outside)} step(s), the first step "
        f"{first}: {kpis.loss_curve[first]:.6g} against {low:.6g}..{high:.6g} "
        f"± {golden.max_rel_diff:.2%}"
    )
    return replace(
        out,
        beyond_limits=(*out.beyond_limits, "golden_loss"),
        problems=(*out.problems, why),
    )


def _loss_curve(trainers: Sequence[ParsedLog]) -> dict[int, float]:
    curve = next((log.summary.loss_by_step for log in trainers if log.summary.loss_by_step), {})
    return {step: curve[step] for step in sorted(curve)[:MAX_CURVE_STEPS]}


def _divergence(trainers: Sequence[ParsedLog]) -> tuple[bool, Problems]:
    """Whether training diverged: a NaN or infinite loss, or the framework's own count of
    NaN (or skipped) iterations above zero, each a problem naming the log."""
    problems = []
    for log in trainers:
        summary = log.summary
        if summary.nonfinite_losses:
            at = summary.first_nonfinite_step
            where = f", the first at step {at}" if at is not None else ""
            problems.append(
                f"trainer {log.rank} ({log.path}): {summary.nonfinite_losses} NaN or infinite "
                f"training loss(es){where}"
            )
        if summary.nan_iterations:
            problems.append(
                f"trainer {log.rank} ({log.path}): the framework counts "
                f"{summary.nan_iterations} NaN or skipped iteration(s)"
            )
    return bool(problems), tuple(problems)


def stored_problems(problems: Sequence[str]) -> tuple[str, ...]:
    """At most MAX_STORED_PROBLEMS problems of at most MAX_PROBLEM_CHARS each, the first
    ones kept and the rest counted in a last "... and N more" (the run folder has them)."""
    clipped = [
        p if len(p) <= MAX_PROBLEM_CHARS else p[: MAX_PROBLEM_CHARS - 1] + "…" for p in problems
    ]
    if len(clipped) <= MAX_STORED_PROBLEMS:
        return tuple(clipped)
    kept = MAX_STORED_PROBLEMS - 1
    return (*clipped[:kept], f"... and {len(clipped) - kept} more")


def without_kpis(spec: ConfigSpec) -> ConfigKpis:
    """A config of the run that has no KPIs to show: failed, never left out (a run whose
    config vanished would otherwise pass on the others)."""
    problem = "no KPIs were stored for this config: counted as failed"
    return ConfigKpis(
        spec.name,
        spec.gpus,
        ConfigStatus.FAILED,
        None,
        None,
        None,
        None,
        None,
        (problem,),
        pservers=spec.pservers,
    )


def run_kpis(run: RunSpec, configs: Mapping[str, ConfigKpis]) -> RunKpis:
    """Speedup, efficiency and accuracy delta of every config against the base config; a
    config of ``run`` missing from ``configs`` is failed."""
    base_spec = run.base_config
    base = configs.get(base_spec.name)
    out = [
        pairs_against_base(
            against_base(
                configs.get(spec.name) or without_kpis(spec), base, base_spec, run.alignment
            ),
            base,
            base_spec,
        )
        for spec in run.configs
    ]
    paired = run.paired
    return RunKpis(
        run.run_id,
        run.model,
        base_spec.name,
        tuple(out),
        run_quality_direction(run, out),
        run.sha if paired else None,
        paired.base_sha if paired else None,
    )


def run_quality_direction(run: RunSpec, configs: Sequence[ConfigKpis]) -> Direction:
    """How the run's quality metric improves: run.json's where it states one, else the one a
    config's logs fix (MLPerf's benchmark; the base config's first), else run.json's default."""
    if run.direction_stated:
        return run.accuracy_direction
    base = run.base_config.name
    ordered = sorted(configs, key=lambda c: c.name != base)
    fixed = next((c.quality_direction for c in ordered if c.quality_direction), None)
    return fixed or run.accuracy_direction


def pairs_against_base(
    kpis: ConfigKpis, base: ConfigKpis | None, base_spec: ConfigSpec
) -> ConfigKpis:
    """A paired config's speedup per pair and arm: against the base config's same arm of
    the same pair, when the base config ran that pair."""
    if not kpis.pairs:
        return kpis
    base_pairs = {p.pair: p for p in base.pairs} if base is not None else {}

    def arm(own: ConfigKpis, pair: int, name: str) -> ConfigKpis:
        other = base_pairs.get(pair)
        return against_base(own, getattr(other, name) if other else None, base_spec)

    pairs = tuple(replace(p, a=arm(p.a, p.pair, "a"), b=arm(p.b, p.pair, "b")) for p in kpis.pairs)
    return replace(kpis, pairs=pairs)


def loss_alignment(
    curve: Mapping[int, float], base: Mapping[int, float], alignment: Alignment
) -> tuple[float, int] | None:
    """The largest relative difference of a loss curve from the base config's over the
    steps both ran from ``alignment.from_step``, and its step; None: no such step."""
    steps = [s for s in curve if s in base and s >= alignment.from_step and base[s] != 0]
    if not steps:
        return None
    worst = max(steps, key=lambda s: abs(curve[s] - base[s]) / abs(base[s]))
    return abs(curve[worst] - base[worst]) / abs(base[worst]), worst


def arms_loss_alignment(pair: PairKpis, alignment: Alignment) -> tuple[PairKpis, str | None]:
    """Whether a paired config's arms give the same training loss curve: B's against A's, as
    a config's against the base config's, and at the same steps from ``alignment.from_step``
    (a head that logs other steps does not train the same way); the pair with it measured,
    and the problem when they do not (or when no step is in both)."""
    a, b = pair.a.loss_curve, pair.b.loss_curve
    if not a or not b:
        return pair, None
    start = alignment.from_step
    only_a = sorted(s for s in a if s >= start and s not in b)
    only_b = sorted(s for s in b if s >= start and s not in a)
    found = loss_alignment(b, a, alignment)
    if found is None:
        why = f"pair {pair.pair}: loss alignment of B against A unknown: no step from {start} "
        return pair, why + "in both arms' loss curves"
    diff, step = found
    aligned = not only_a and not only_b and diff <= alignment.max_rel_diff
    measured = replace(pair, aligned=aligned, loss_alignment=diff, loss_alignment_step=step)
    if only_a or only_b:
        first = min(only_a + only_b)
        return measured, (
            f"pair {pair.pair}: B's loss curve is not at A's steps: {len(only_b)} step(s) only "
            f"B reported, {len(only_a)} only A, the first {first} (from step {start})"
        )
    if not aligned:
        return measured, (
            f"pair {pair.pair}: B's loss curve {diff:.2%} from A's at step {step} "
            f"({b[step]:.6g} vs {a[step]:.6g}), beyond {alignment.max_rel_diff:.2%}"
        )
    return measured, None


def _aligned(kpis: ConfigKpis, base: ConfigKpis | None, alignment: Alignment | None) -> ConfigKpis:
    """The config's loss curve against the base config's, when the suite asks for it."""
    if alignment is None or base is None or base.name == kpis.name or not kpis.loss_curve:
        return kpis
    found = loss_alignment(kpis.loss_curve, base.loss_curve, alignment)
    if found is None:
        why = f"loss alignment unknown: no step from {alignment.from_step} in both this config's "
        why += f"and the base config {base.name}'s loss curves"
        return replace(kpis, problems=(*kpis.problems, why))
    diff, step = found
    aligned = diff <= alignment.max_rel_diff
    problems = kpis.problems
    if not aligned:
        problems = (
            *problems,
            f"loss curve {diff:.2%} from the base config {base.name}'s at step {step} "
            f"({kpis.loss_curve[step]:.6g} vs {base.loss_curve[step]:.6g}), beyond "
            f"{alignment.max_rel_diff:.2%}",
        )
    out = kpis.with_values({"loss_alignment": diff})
    beyond = (*kpis.beyond_limits, "loss_alignment") if not aligned else kpis.beyond_limits
    return replace(out, beyond_limits=beyond, loss_alignment_step=step, problems=problems)


def against_base(
    kpis: ConfigKpis,
    base: ConfigKpis | None,
    base_spec: ConfigSpec,
    alignment: Alignment | None = None,
) -> ConfigKpis:
    kpis = _aligned(kpis, base, alignment)
    problems = list(kpis.problems)
    speedup = efficiency = None
    base_throughput = base.throughput if base is not None else None
    if kpis.throughput is not None and base is not None and base_throughput:
        speedup = kpis.throughput / base_throughput
        efficiency = speedup / (kpis.gpus / base.gpus)
        if efficiency > SUPER_LINEAR and SUPER_LINEAR_PROBLEM not in problems:
            problems.append(SUPER_LINEAR_PROBLEM)
    elif kpis.throughput is not None:
        why = base.status.value if base is not None else "missing"
        problems.append(f"speedup unknown: base config {base_spec.name} is {why}")
    delta = None
    if base is not None and kpis.test_accuracy is not None and base.test_accuracy is not None:
        delta = kpis.test_accuracy - base.test_accuracy
    return replace(
        kpis,
        speedup=speedup,
        efficiency=efficiency,
        accuracy_delta=delta,
        problems=tuple(problems),
    )
