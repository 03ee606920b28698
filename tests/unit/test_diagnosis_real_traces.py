"""Real traces (tests/data/traces, from HTA's tests) reduced as HTA reduces them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.diagnosis.breakdown import RankBreakdown, reduce_trace, temporal_breakdown
from distkpi.domain.diagnosis.compare import diagnose, summary
from distkpi.domain.diagnosis.trace import Trace, read_trace

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
EXPECTED: dict[str, Any] = json.loads((TRACES / "expected.json").read_text())
FILES = sorted(k for k in EXPECTED if not k.startswith("_"))
GPU_FILES = [f for f in FILES if EXPECTED[f]["hta"] is not None]


@cache
def trace(name: str) -> Trace:
    return read_trace((TRACES / name).read_bytes())


@cache
def reduced(name: str) -> RankBreakdown:
    return reduce_trace(trace(name))


@pytest.mark.parametrize("name", GPU_FILES)
def test_gpu_traces_give_htas_temporal_breakdown_and_overlap(name: str) -> None:
    hta = EXPECTED[name]["hta"]
    got = temporal_breakdown(trace(name))
    # HTA reads timestamps as whole microseconds
    assert got.idle_us == pytest.approx(hta["idle_time_us"], abs=2)
    assert got.compute_us == pytest.approx(hta["compute_time_us"], abs=2)
    assert got.non_compute_us == pytest.approx(hta["non_compute_time_us"], abs=2)
    assert got.kernel_us == pytest.approx(hta["kernel_time_us"], abs=2)
    assert 100 * got.comm_comp_overlap == pytest.approx(hta["comp_comm_overlap_pctg"], abs=0.02)


@pytest.mark.parametrize("name", GPU_FILES)
def test_the_steps_compute_is_htas_compute(name: str) -> None:
    r = reduced(name)
    assert r.device == "gpu"
    assert r.steps == EXPECTED[name]["steps"]
    assert r.compute_s * r.steps * 1e6 == pytest.approx(
        EXPECTED[name]["hta"]["compute_time_us"], abs=2
    )


@pytest.mark.parametrize("name", FILES)
def test_the_parts_of_a_step_add_up_to_it(name: str) -> None:
    r = reduced(name)
    parts = r.compute_s + r.exposed_communication_s + r.other_s + r.data_s + r.idle_s
    assert parts == pytest.approx(r.step_s, rel=1e-9)
    assert 0 <= r.exposed_communication_s <= r.communication_s


@pytest.mark.parametrize("name", FILES)
def test_collectives_per_step_are_counted_with_their_bytes(name: str) -> None:
    r = reduced(name)
    got = {kind: [c.count, c.bytes] for kind, c in r.collectives.items() if c.count}
    assert got == EXPECTED[name]["collectives"]


def test_a_gloo_trace_on_cpu_is_reduced_by_the_same_rules() -> None:
    name = "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    r = reduced(name)
    assert r.device == "cpu" and r.rank == 34 and r.steps == 1
    assert r.step_s * 1e6 == pytest.approx(EXPECTED[name]["step_us"])
    # two gloo threads all-reduce through most of the step, hidden behind no host op
    assert r.communication_s == r.exposed_communication_s
    assert 0.8 < r.communication_s / r.step_s < 0.9


def test_two_ranks_of_one_run_are_averaged_with_their_spread() -> None:
    ranks = [reduced(f"trace_filter/sampled_rank-{i}.json.gz") for i in (0, 1)]
    d = diagnose({"trainer": ranks}, {"trainer": ranks})
    base = d.roles["trainer"]["base"]
    assert base.ranks == 2
    low, high = base.spread["compute_s"]
    assert low == min(r.compute_s for r in ranks) and high == max(r.compute_s for r in ranks)
    assert base.mean["compute_s"] == pytest.approx((low + high) / 2)
    assert d.largest_change is None  # the same traces on both sides: nothing changed


def test_htas_trace_diff_pair_is_explained_by_compute() -> None:
    base, head = reduced("trace_diff/control.json.gz"), reduced("trace_diff/test.json.gz")
    d = diagnose({"trainer": [base]}, {"trainer": [head]})
    # head's step is 64% longer; its compute kernels take 39 ms more of the 49
    assert d.largest_change == "compute"
    assert summary(d) == (
        "step time +64% (76.8 -> 126 ms per step): compute +83% per step (47 -> 85.8 ms), "
        "communication +44%"
    )
    assert len(d.top_ops) == 10
    changes = [abs(op["change_s"]) for op in d.top_ops]
    assert changes == sorted(changes, reverse=True)
