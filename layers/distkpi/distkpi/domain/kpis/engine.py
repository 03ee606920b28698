"""KPI maths (docs/architecture.md): per config from its parsed files, then across the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from distkpi.domain.contracts import ConfigSpec, NodeManifest, Role, RunSpec
from distkpi.domain.logs.gpumemory import GpuMemorySummary
from distkpi.domain.logs.logsummary import LogSummary

# a config's hardware when a node could not read its own, and when its trainers disagree:
# unknown is compared only with unknown, mixed with nothing
UNKNOWN = "unknown"
MIXED = "mixed"


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

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": self.gpus,
            "status": self.status.value,
            "throughput": self.throughput,
            "speedup": self.speedup,
            "efficiency": self.efficiency,
            "time_to_accuracy_s": self.time_to_accuracy_s,
            "test_accuracy": self.test_accuracy,
            "accuracy_delta": self.accuracy_delta,
            "trainer_gpu_memory_mib": self.trainer_gpu_memory_mib,
            "pserver_gpu_memory_mib": self.pserver_gpu_memory_mib,
            "problems": list(self.problems),
            "runs": self.runs,
            "hardware": self.hardware,
            "gpu_hours": self.gpu_hours,
        }

    def to_record(self) -> dict[str, Any]:
        """to_json plus what only storage needs (within-run samples)."""
        return {
            **self.to_json(),
            "name": self.name,
            "throughput_samples": list(self.throughput_samples),
            "converged": self.converged,
            "run_values": {kpi: list(values) for kpi, values in self.run_values.items()},
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> ConfigKpis:
        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        return cls(
            name=str(data["name"]),
            gpus=int(data["gpus"]),
            status=ConfigStatus(data["status"]),
            throughput=number("throughput"),
            speedup=number("speedup"),
            efficiency=number("efficiency"),
            time_to_accuracy_s=number("time_to_accuracy_s"),
            test_accuracy=number("test_accuracy"),
            accuracy_delta=number("accuracy_delta"),
            trainer_gpu_memory_mib=number("trainer_gpu_memory_mib"),
            pserver_gpu_memory_mib=number("pserver_gpu_memory_mib"),
            problems=tuple(str(p) for p in data.get("problems", ())),
            throughput_samples=tuple(float(v) for v in data.get("throughput_samples", ())),
            converged=_converged(data),
            runs=int(data.get("runs", 1)),
            hardware=None if data.get("hardware") is None else str(data["hardware"]),
            gpu_hours=number("gpu_hours"),
            run_values={
                str(kpi): tuple(float(v) for v in values)
                for kpi, values in (data.get("run_values") or {}).items()
            },
        )


def _converged(data: Mapping[str, Any]) -> bool | None:
    """Stored records know it; older ones (and `distkpi kpis --json`) said it in a problem."""
    if "converged" in data:
        return None if data["converged"] is None else bool(data["converged"])
    if data.get("time_to_accuracy_s") is not None:
        return True
    if any(str(p).startswith("accuracy never reached") for p in data.get("problems", ())):
        return False
    return None


@dataclass(frozen=True)
class RunKpis:
    run_id: str
    model: str
    base_config: str | None
    configs: tuple[ConfigKpis, ...]

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
        return cls(data["run_id"], data["model"], data["base_config"], configs)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "model": self.model,
            "base_config": self.base_config,
            "gpu_hours": self.gpu_hours,
            "configs": {c.name: c.to_json() for c in self.configs},
        }


Problems = tuple[str, ...]


def _status(evidence: ConfigEvidence) -> tuple[ConfigStatus, Problems]:
    problems = [f"node {node}: {reason}" for node, reason in sorted(evidence.invalid_nodes.items())]
    failed = bool(problems)
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


def _log_throughput(log: ParsedLog, gpus_per_trainer: int) -> float | None:
    best = log.summary.best_throughput()
    if best is not None:
        return best[0]
    per_gpu = log.summary.per_gpu_throughput.mean
    return per_gpu * gpus_per_trainer if per_gpu is not None else None


def _throughput(
    spec: ConfigSpec, trainers: Sequence[ParsedLog]
) -> tuple[tuple[float | None, tuple[float, ...]], Problems]:
    """(the config's throughput, its within-run samples), and why either is missing."""
    totals = [log.summary.explicit_total for log in trainers if log.summary.explicit_total]
    if totals:
        return (totals[0], ()), ()
    if not trainers:
        return (None, ()), ("no trainer log",)
    values: list[float] = []
    samples: list[float] = []
    problems: list[str] = []
    for log in trainers:
        value = _log_throughput(log, spec.gpus_per_trainer)
        if value is None:
            problems.append(f"trainer {log.rank} ({log.path}): no throughput reported")
            continue
        values.append(value)
        samples.extend(log.summary.samples())
    if len(values) < len(trainers):
        if values:
            problems.append("throughput not given: a sum over some trainers only would be partial")
        return (None, ()), tuple(problems)
    # Per-sample totals only make sense when a single trainer log carries them.
    return (sum(values), tuple(samples) if len(trainers) == 1 else ()), tuple(problems)


def _time_to_accuracy(
    trainers: Sequence[ParsedLog], target: float
) -> tuple[tuple[float | None, bool | None], Problems]:
    """(seconds to the target, whether it was reached: None when the logs cannot tell)."""
    for log in trainers:
        if log.summary.converge_speed_s is not None:
            return (log.summary.converge_speed_s, True), ()
    starts = [log.summary.run_start_s for log in trainers if log.summary.run_start_s is not None]
    timed = [log for log in trainers if log.summary.accuracy_frontier]
    if not starts or not timed:
        unknown = "time to accuracy unknown: the logs have no timed run_start and evaluations"
        return (None, None), (unknown,)
    reached = [t for log in timed if (t := log.summary.first_time_reaching(target)) is not None]
    if not reached:
        best = max(log.summary.accuracy_frontier[-1].accuracy for log in timed)
        return (None, False), (f"accuracy never reached the target {target:g} (best {best:.4f})",)
    return (max(0.0, min(reached) - min(starts)), True), ()


def _test_accuracy(
    trainers: Sequence[ParsedLog], accuracy_pass: int
) -> tuple[float | None, Problems]:
    for log in trainers:
        summary = log.summary
        if summary.last_accuracy is None:
            continue
        problems: Problems = ()
        if accuracy_pass not in summary.accuracy_by_pass:
            problems = (f"no test accuracy for pass {accuracy_pass}; the last reported is used",)
        value = summary.accuracy_at(accuracy_pass)
        if value is not None and not 0.0 <= value <= 1.0:
            return None, (*problems, f"test accuracy {value:g} is outside [0, 1]; ignored")
        return value, problems
    return None, ("no test accuracy reported",)


def _peak_memory(
    evidence: ConfigEvidence, role: Role, expected: bool
) -> tuple[float | None, Problems]:
    peaks = [
        g.summary.peak_mib
        for g in evidence.gpu_memory
        if g.role == role and g.summary.peak_mib is not None
    ]
    if peaks:
        return max(peaks), ()
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


def config_kpis(evidence: ConfigEvidence, target_accuracy: float, accuracy_pass: int) -> ConfigKpis:
    """One config's own KPIs; speedup, efficiency and accuracy delta come from run_kpis."""
    spec = evidence.spec
    status, node_problems = _status(evidence)
    file_problems = [f"{log.path}: {p}" for log in evidence.logs for p in log.summary.problems]
    file_problems += [f"{g.path}: {p}" for g in evidence.gpu_memory for p in g.summary.problems]
    trainers = sorted((log for log in evidence.logs if log.role == "trainer"), key=lambda x: x.rank)
    crashes = [
        f"{log.role} {log.rank} ({log.path}) crashed: its log shows {log.summary.crash}"
        for log in evidence.logs
        if log.summary.crash is not None
    ]
    if crashes:  # even when its node exited 0, as Paddle's legacy launcher does
        status = ConfigStatus.FAILED
    (throughput, samples), throughput_problems = _throughput(spec, trainers)
    if throughput is None and status is ConfigStatus.OK:
        status = ConfigStatus.FAILED
    if status is not ConfigStatus.OK:
        throughput, samples = None, ()
    (tta, converged), tta_problems = _time_to_accuracy(trainers, target_accuracy)
    accuracy, accuracy_problems = _test_accuracy(trainers, accuracy_pass)
    trainer_memory, trainer_memory_problems = _peak_memory(evidence, "trainer", True)
    pserver_memory, pserver_memory_problems = _peak_memory(evidence, "pserver", spec.pservers > 0)
    hardware, hardware_problems = _hardware(evidence)
    return ConfigKpis(
        name=spec.name,
        gpus=spec.gpus,
        status=status,
        throughput=throughput,
        throughput_samples=samples,
        time_to_accuracy_s=tta,
        converged=converged,
        test_accuracy=accuracy,
        trainer_gpu_memory_mib=trainer_memory,
        pserver_gpu_memory_mib=pserver_memory,
        problems=(
            *evidence.problems,
            *node_problems,
            *crashes,
            *file_problems,
            *throughput_problems,
            *tta_problems,
            *accuracy_problems,
            *trainer_memory_problems,
            *pserver_memory_problems,
            *hardware_problems,
        ),
        hardware=hardware,
        gpu_hours=_gpu_hours(evidence),
    )


def run_kpis(run: RunSpec, configs: Mapping[str, ConfigKpis]) -> RunKpis:
    """Speedup, efficiency and accuracy delta of every config against the base config."""
    base_spec = run.base_config
    base = configs.get(base_spec.name)
    out: list[ConfigKpis] = []
    for spec in run.configs:
        kpis = configs.get(spec.name)
        if kpis is None:
            continue
        out.append(against_base(kpis, base, base_spec))
    return RunKpis(run.run_id, run.model, base_spec.name, tuple(out))


def against_base(kpis: ConfigKpis, base: ConfigKpis | None, base_spec: ConfigSpec) -> ConfigKpis:
    problems = list(kpis.problems)
    speedup = efficiency = None
    base_throughput = base.throughput if base is not None else None
    if kpis.throughput is not None and base is not None and base_throughput:
        speedup = kpis.throughput / base_throughput
        efficiency = speedup / (kpis.gpus / base.gpus)
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
