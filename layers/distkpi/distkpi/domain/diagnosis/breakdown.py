"""One rank's trace reduced to where its profiled steps' time went, per step.

The parts of a step add up to it: each instant of the steps' window counts once, for the
first of compute, data loading, communication, other that covers it, else as idle; so
`exposed_communication_s` is the communication that neither computation (HTA's
`get_comm_comp_overlap`, seen from the other side) nor the host's data loading hides, and
`communication_s` is all of it.

A GPU trace is read as HTA's `get_temporal_breakdown` reads it: its kernels, memcpys and
memsets classified by `rules.kernel_type` and merged (`merge_kernel_intervals`); idle is the
window no GPU event covers, except where the host is loading data. A CPU trace (gloo, no
GPU events) by the same rules, its host ops standing in for the kernels: a `cpu_op` is
compute, a `gloo:`/`nccl:` collective span or a `c10d::` op (the host calling, or blocked
in, a collective) communication, a `record_function` region of the user's other host time,
a DataLoader span (and the ops inside it) data loading. On both, an `rpc_async#...` span
(a parameter server's pull or push, named as torch.distributed.rpc names its calls; Kineto
records none itself) is communication. A Paddle trace is reduced by the same code, its
categories read by `rules` (`Operator` for `cpu_op`, `Dataloader` spans, its annotations)."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from distkpi.domain.diagnosis import intervals as iv
from distkpi.domain.diagnosis import rules
from distkpi.domain.diagnosis.rules import KernelType
from distkpi.domain.diagnosis.trace import Event, Trace

US = 1e-6
PARTS = ("compute_s", "exposed_communication_s", "other_s", "data_s", "idle_s")


@dataclass(frozen=True)
class Collective:
    """One kind of collective, per step: calls, bytes in, and the time its work ran."""

    count: float
    bytes: float
    time_s: float


@dataclass(frozen=True)
class RankBreakdown:
    """Seconds per profiled step of one rank; the five PARTS add up to `step_s`."""

    rank: int | None
    steps: int
    device: str  # "gpu" or "cpu": which events stood for the work
    step_s: float
    compute_s: float
    communication_s: float
    exposed_communication_s: float
    other_s: float
    data_s: float
    idle_s: float
    collectives: dict[str, Collective] = field(default_factory=dict)
    ops: dict[str, float] = field(default_factory=dict)  # name -> seconds per step


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    steps: int
    host_end: float  # the host's part of the steps ends here (the GPU's may run on)


def reduce_trace(trace: Trace) -> RankBreakdown:
    events = trace.events
    steps = _steps(events)
    gpu = [e for e in events if rules.is_device(e)]
    if gpu:
        window, kernels = _gpu_window(events, gpu, steps)
        layers, ops = _gpu_layers(kernels), _op_times(kernels)
        layers["communication"] += _rpc_spans(events)
        comm_by_kind = _kernel_comm_times(events, kernels)
    else:
        window = _cpu_window(events, steps)
        layers, ops, comm_by_kind = _cpu_layers(events), _op_times(_host_ops(events)), {}
    data = _data_spans(events)
    clipped = {k: iv.merge(iv.clip(v, window.start, window.end)) for k, v in layers.items()}
    compute, communication = clipped["compute"], clipped["communication"]
    other, loading = clipped["other"], iv.merge(iv.clip(data, window.start, window.host_end))
    shares = iv.by_priority([compute, loading, communication, other])
    span, n = window.end - window.start, window.steps
    return RankBreakdown(
        rank=trace.rank,
        steps=n,
        device="gpu" if gpu else "cpu",
        step_s=span * US / n,
        compute_s=iv.length(compute) * US / n,
        communication_s=iv.length(communication) * US / n,
        exposed_communication_s=shares[2] * US / n,
        other_s=shares[3] * US / n,
        data_s=shares[1] * US / n,
        idle_s=max(span - sum(shares), 0.0) * US / n,
        collectives=_collectives(events, window, comm_by_kind),
        ops={name: t * US / n for name, t in ops.items()},
    )


def _steps(events: Sequence[Event]) -> list[Event]:
    """The `ProfilerStep#N` spans, each once, in order."""
    steps: dict[str, Event] = {}
    for e in events:
        if rules.is_step(e):
            steps.setdefault(e.name, e)
    return sorted(steps.values(), key=lambda e: e.ts)


def _cpu_window(events: Sequence[Event], steps: Sequence[Event]) -> Window:
    """The profiled steps, or all of the trace as one step."""
    if steps:
        end = max(e.end for e in steps)
        return Window(steps[0].ts, end, len(steps), end)
    host = [e for e in events if rules.is_host(e)]
    if not host:
        return Window(0.0, 0.0, 1, 0.0)
    end = max(e.end for e in host)
    return Window(min(e.ts for e in host), end, 1, end)


def _gpu_window(
    events: Sequence[Event], gpu: Sequence[Event], steps: Sequence[Event]
) -> tuple[Window, list[Event]]:
    """The GPU events the host launched in the profiled steps but the last (whose GPU work
    the trace may cut off), as HTA's `Trace._filter_irrelevant_gpu_kernels` keeps them;
    the window runs from the first step's start to the last of them. Fewer than two steps:
    every GPU event, as one step (HTA keeps them all then too)."""
    if len(steps) < 2:
        end = max(e.end for e in gpu)
        return Window(min(e.ts for e in gpu), end, 1, end), list(gpu)
    kept = launched_before(events, gpu, steps[-1].ts, since=steps[0].ts)
    end = max([steps[-1].ts, *(e.end for e in kept)])
    return Window(steps[0].ts, end, len(steps) - 1, steps[-1].ts), kept


def launched_before(
    events: Sequence[Event], gpu: Sequence[Event], before: float, since: float | None = None
) -> list[Event]:
    """GPU events whose launch (the host event with the same `correlation`) starts in
    [since, before)."""
    launched = {
        e.args.get("correlation")
        for e in events
        if not rules.is_device(e)
        and "correlation" in e.args
        and e.ts < before
        and (since is None or e.ts >= since)
    }
    return [e for e in gpu if e.args.get("correlation") in launched]


def _gpu_layers(kernels: Sequence[Event]) -> dict[str, list[iv.Interval]]:
    layers: dict[str, list[iv.Interval]] = {"compute": [], "communication": [], "other": []}
    for e in kernels:
        kind = rules.kernel_type(e.name)
        key = {KernelType.COMPUTATION: "compute", KernelType.COMMUNICATION: "communication"}
        layers[key.get(kind, "other")].append((e.ts, e.end))
    return layers


def _kernel_comm_times(events: Sequence[Event], kernels: Sequence[Event]) -> dict[str, float]:
    """Communication kernels' time by the collective that launched them: the kernel's own
    `Collective name`, else the host collective span around its launch (found by its
    `correlation`), else its name (an all_to_all runs `SendRecv` kernels)."""
    launches = {
        e.args.get("correlation"): e
        for e in events
        if e.cat in ("cuda_runtime", "cuda_driver", "CudaRuntime") and "correlation" in e.args
    }
    calls: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    for e in events:
        kind = rules.collective_call(e)
        if kind is not None:
            calls[(e.pid, e.tid)].append((e.ts, e.end, kind))
    for spans in calls.values():
        spans.sort()
    starts = {k: [s for s, _, _ in v] for k, v in calls.items()}
    times: dict[str, float] = defaultdict(float)
    for e in kernels:
        if rules.kernel_type(e.name) is not KernelType.COMMUNICATION:
            continue
        times[_launched_by(e, launches, calls, starts)] += e.dur
    return times


def _launched_by(
    kernel: Event,
    launches: dict[object, Event],
    calls: dict[tuple[str, str], list[tuple[float, float, str]]],
    starts: dict[tuple[str, str], list[float]],
) -> str:
    named = kernel.args.get("Collective name")
    if isinstance(named, str) and named:
        return rules.collective_kind(named)
    launch = launches.get(kernel.args.get("correlation"))
    if launch is not None:
        key = (launch.pid, launch.tid)
        i = bisect_right(starts.get(key, []), launch.ts) - 1
        if i >= 0 and calls[key][i][1] >= launch.end:
            return calls[key][i][2]
    return rules.kernel_collective(kernel.name)


def _rpc_spans(events: Sequence[Event]) -> list[iv.Interval]:
    return [(e.ts, e.end) for e in events if rules.is_rpc_call(e)]


def _data_spans(events: Sequence[Event]) -> list[iv.Interval]:
    return [(e.ts, e.end) for e in events if rules.is_data_loading(e)]


def _cpu_layers(events: Sequence[Event]) -> dict[str, list[iv.Interval]]:
    """Host ops as a CPU rank's work; ops inside a DataLoader span are data loading."""
    layers: dict[str, list[iv.Interval]] = {
        "compute": [(e.ts, e.end) for e in _cpu_ops(events)],
        "communication": [],
        "other": [],
    }
    for e in events:
        if (
            rules.collective_call(e) is not None
            or rules.is_rpc_call(e)
            or (rules.is_host_op(e) and _is_comm_op(e.name))
        ):
            layers["communication"].append((e.ts, e.end))
        elif rules.is_annotation(e) and not (rules.is_step(e) or rules.is_data_loading(e)):
            layers["other"].append((e.ts, e.end))
    return layers


def _cpu_ops(events: Sequence[Event]) -> list[Event]:
    """The host ops that are work: `cpu_op`s outside data loading, not a collective's call."""
    loading: dict[tuple[str, str], list[iv.Interval]] = defaultdict(list)
    for e in events:
        if rules.is_data_loading(e):
            loading[(e.pid, e.tid)].append((e.ts, e.end))
    merged = {k: iv.merge(v) for k, v in loading.items()}
    starts = {k: [s for s, _ in v] for k, v in merged.items()}
    ops = []
    for e in events:
        if not rules.is_host_op(e) or _is_comm_op(e.name) or rules.collective_call(e):
            continue
        spans = merged.get((e.pid, e.tid))
        if spans:
            i = bisect_right(starts[(e.pid, e.tid)], e.ts) - 1
            if i >= 0 and spans[i][0] <= e.ts and e.end <= spans[i][1]:
                continue
        ops.append(e)
    return ops


def _host_ops(events: Sequence[Event]) -> list[Event]:
    """What a CPU trace's top operations are chosen from: its ops (each with its children's
    time), its collectives' spans and its DataLoader spans."""
    return [
        e
        for e in events
        if rules.is_host_op(e)
        or rules.collective_call(e) is not None
        or rules.is_rpc_call(e)
        or rules.is_data_loading(e)
    ]


def _is_comm_op(name: str) -> bool:
    return name.startswith("c10d::") or name == "record_param_comms"


def _op_times(events: Sequence[Event]) -> dict[str, float]:
    times: dict[str, float] = defaultdict(float)
    for e in events:
        times[e.name] += e.dur
    return dict(times)


def _collectives(
    events: Sequence[Event], window: Window, device_times: dict[str, float]
) -> dict[str, Collective]:
    """Calls and bytes from the host's collective spans in the window; time from the GPU's
    communication kernels where there are any, else from those spans (gloo runs them)."""
    count: dict[str, int] = defaultdict(int)
    size: dict[str, int] = defaultdict(int)
    host_time: dict[str, float] = defaultdict(float)
    for e in events:
        kind = "rpc" if rules.is_rpc_call(e) else rules.collective_call(e)
        if kind is None or not window.start <= e.ts < window.host_end:
            continue
        count[kind] += 1
        size[kind] += rules.collective_bytes(e)
        host_time[kind] += e.dur
    times = {**host_time, **device_times} if device_times else host_time
    n = window.steps
    return {
        kind: Collective(
            count.get(kind, 0) / n, size.get(kind, 0) / n, times.get(kind, 0.0) * US / n
        )
        for kind in sorted(set(count) | set(times))
    }


@dataclass(frozen=True)
class TemporalBreakdown:
    """HTA's `get_temporal_breakdown` and `get_comm_comp_overlap` of one rank, in
    microseconds over all of its GPU events (no steps): the rules this module follows."""

    idle_us: float
    compute_us: float
    non_compute_us: float
    kernel_us: float
    comm_comp_overlap: float  # of the communication kernels' merged time


def temporal_breakdown(trace: Trace) -> TemporalBreakdown:
    gpu = [e for e in trace.events if rules.is_device(e)]
    steps = _steps(trace.events)
    if len(steps) >= 2:
        gpu = launched_before(trace.events, gpu, steps[-1].ts)
    if not gpu:
        raise ValueError("no GPU events: HTA's temporal breakdown needs kernels")
    every = iv.merge((e.ts, e.end) for e in gpu)
    kernel = every[-1][1] - every[0][0]
    idle = kernel - iv.length(every)
    layers = _gpu_layers(gpu)
    compute, comm = iv.merge(layers["compute"]), iv.merge(layers["communication"])
    both = iv.length(compute) + iv.length(comm) - iv.length(iv.merge([*compute, *comm]))
    comm_time = iv.length(comm)
    return TemporalBreakdown(
        idle_us=idle,
        compute_us=iv.length(compute),
        non_compute_us=kernel - iv.length(compute) - idle,
        kernel_us=kernel,
        comm_comp_overlap=both / comm_time if comm_time else 0.0,
    )
