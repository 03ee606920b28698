"""Real PaddlePaddle profiler traces (tests/data/traces/paddle, made by the real Paddle 2.6.2
CPU build: see the README there) reduced by the rules Kineto traces are reduced by."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

from distkpi.domain.diagnosis import rules
from distkpi.domain.diagnosis.breakdown import RankBreakdown, reduce_trace
from distkpi.domain.diagnosis.compare import diagnose
from distkpi.domain.diagnosis.trace import Event, Trace, read_trace

PADDLE = Path(__file__).resolve().parents[1] / "data" / "traces" / "paddle"
FILES = ["base", "data", "compute", "dataparallel-rank-0"]


@cache
def trace(name: str) -> Trace:
    return read_trace((PADDLE / f"{name}.json.gz").read_bytes())


@cache
def reduced(name: str) -> RankBreakdown:
    return reduce_trace(trace(name))


def test_paddles_names_are_read_without_their_duration() -> None:
    raw = json.loads(gzip.decompress((PADDLE / "base.json.gz").read_bytes()))
    complete = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    assert complete[0]["name"].startswith("ProfileStep#2[")  # `ProfileStep#2[3.412 ms]`
    names = [e.name for e in trace("base").events]
    assert names == [e["name"][: e["name"].rindex("[")] for e in complete]
    assert "matmul dygraph" in names and "_DataLoaderIterSingleProcess" in names


@pytest.mark.parametrize("name", FILES)
def test_a_paddle_trace_has_its_profiled_steps_and_parts_that_add_up(name: str) -> None:
    r = reduced(name)
    assert r.device == "cpu" and r.steps == 3  # ProfileStep#2..#4: 2 warm-up steps, then 3
    parts = r.compute_s + r.exposed_communication_s + r.other_s + r.data_s + r.idle_s
    assert parts == pytest.approx(r.step_s, rel=1e-9)
    assert r.compute_s > 0 and r.ops["matmul dygraph"] > 0


def test_a_slow_data_loader_is_data_loading() -> None:
    base, data = reduced("base"), reduced("data")
    assert data.data_s > 0.09  # the loader sleeps 0.1 s a batch
    assert data.data_s / data.step_s > 0.9
    assert max(data.ops, key=data.ops.__getitem__) == "_DataLoaderIterSingleProcess"
    assert diagnose({"trainer": [base]}, {"trainer": [data]}).largest_change == "data"


def test_more_computation_is_compute() -> None:
    base, compute = reduced("base"), reduced("compute")
    assert compute.compute_s / compute.step_s > 0.9
    assert compute.ops["tanh dygraph"] > 0 and "tanh dygraph" not in base.ops
    assert diagnose({"trainer": [base]}, {"trainer": [compute]}).largest_change == "compute"


def test_the_same_trace_twice_has_no_largest_change() -> None:
    base = reduced("base")
    assert diagnose({"trainer": [base]}, {"trainer": [base]}).largest_change is None


def test_a_gloo_data_parallel_trace_shows_no_communication() -> None:
    # Paddle 2.6.2 records no event for a gloo ProcessGroup's collective: the gradients'
    # all-reduce of paddle.DataParallel runs inside its GradNodeAccumulation ops
    r = reduced("dataparallel-rank-0")
    assert r.communication_s == 0 and r.collectives == {}
    assert max(r.ops, key=r.ops.__getitem__) == "GradNodeAccumulation"


@pytest.mark.parametrize(
    ("name", "cat", "kind"),
    [
        ("c_allreduce_sum", "Operator", "all_reduce"),
        ("mp_allreduce_sum", "Operator", "all_reduce"),
        ("c_broadcast", "Operator", "broadcast"),
        ("all_gather", "Communication", "all_gather"),
        ("matmul dygraph", "Operator", None),
        ("c_allreduce_sum", "OperatorInner", None),
    ],
)
def test_paddles_communication_is_what_its_own_summary_counts(
    name: str, cat: str, kind: str | None
) -> None:
    event = Event(name, cat, 0.0, 1.0, "1", "1(C++)")
    assert rules.collective_call(event) == kind


def test_paddles_categories_mean_what_kinetos_do() -> None:
    def event(cat: str, name: str = "x") -> Event:
        return Event(name, cat, 0.0, 1.0, "1", "1(Python)")

    assert rules.is_host_op(event("Operator")) and not rules.is_host_op(event("OperatorInner"))
    assert rules.is_data_loading(event("Dataloader", "_DataLoaderIterMultiProcess"))
    assert rules.is_step(event("ProfileStep", "ProfileStep#7"))
    assert all(
        rules.is_annotation(event(c)) for c in ("PythonUserDefined", "Forward", "Optimization")
    )
    assert all(rules.is_device(event(c)) for c in ("Kernel", "Memcpy", "Memset"))
    assert not rules.is_device(event("CudaRuntime"))
