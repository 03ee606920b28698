"""The one line people read of a diagnosis (the check run, the alert, a pull request's
comment), whole: from the diagnosis as stored (the contract's JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distkpi.domain.diagnosis.breakdown import Collective, RankBreakdown, reduce_trace
from distkpi.domain.diagnosis.compare import diagnose
from distkpi.domain.diagnosis.texts import diagnosis_line, regression_line
from distkpi.domain.diagnosis.trace import read_trace

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def rank(compute: float, all_reduce: float, *, calls: float = 1) -> RankBreakdown:
    step = compute + all_reduce + 0.002
    moved = {"all_reduce": Collective(calls, 4e6 * calls, all_reduce)}
    return RankBreakdown(rank=0, steps=5, device="gpu", step_s=step, compute_s=compute,
                         communication_s=all_reduce, exposed_communication_s=all_reduce,
                         other_s=0.0, data_s=0.001, idle_s=0.001,
                         collectives=moved)  # fmt: skip


def stored(base: RankBreakdown, head: RankBreakdown, role: str = "trainer") -> dict[str, Any]:
    return diagnose({role: [base]}, {role: [head]}).to_json()


def test_a_head_whose_all_reduce_takes_longer_is_told_by_it() -> None:
    d = stored(rank(0.010, 0.0021), rank(0.010, 0.0029, calls=2))
    assert d["largest_change"] == "communication"
    line = diagnosis_line(d)
    assert line == "communication +38% per step (all_reduce 2.1 -> 2.9 ms), compute unchanged"
    assert regression_line("1x8", "throughput", -0.12, line) == (
        "1x8 throughput -12%: communication +38% per step (all_reduce 2.1 -> 2.9 ms), "
        "compute unchanged"
    )


def test_htas_trace_diff_pair_says_compute_with_its_times() -> None:
    base, head = (
        reduce_trace(read_trace((TRACES / "trace_diff" / name).read_bytes()))
        for name in ("control.json.gz", "test.json.gz")
    )
    assert diagnosis_line(stored(base, head)) == (
        "compute +83% per step (47 -> 86 ms), communication +44%"
    )


def test_a_change_no_part_explains_says_so() -> None:
    d = stored(rank(0.010, 0.004), rank(0.0102, 0.0041))  # +2% of the step: noise
    assert d["largest_change"] is None
    assert diagnosis_line(d) == (
        "step time +2%: no part explains it (noise, or outside the profiled steps)"
    )


def test_a_parameter_server_s_change_names_its_role() -> None:
    d = stored(rank(0.002, 0.010), rank(0.002, 0.020), role="pserver")
    assert diagnosis_line(d) == (
        "pserver communication +100% per step (all_reduce 10 -> 20 ms), compute unchanged"
    )


def test_no_traces_of_both_commits_is_said_plainly() -> None:
    assert diagnosis_line({"roles": {}, "largest_change": None}) == (
        "no traces of both commits to compare"
    )
    assert regression_line("4x8", "step time", None, "x") == "4x8 step time: x"
