"""The pieces the diagnosis reduces a trace with: HTA's kernel classes, collective names and
sizes, and time split by priority."""

from __future__ import annotations

import gzip
import json

import pytest

from distkpi.domain.diagnosis import intervals as iv
from distkpi.domain.diagnosis import rules
from distkpi.domain.diagnosis.rules import KernelType
from distkpi.domain.diagnosis.trace import Event, TraceError, read_trace


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", KernelType.COMMUNICATION),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
         KernelType.COMMUNICATION),
        ("Memcpy HtoD (Pageable -> Device)", KernelType.MEMORY),
        ("Memset (Device)", KernelType.MEMORY),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
         KernelType.COMPUTATION),
        ("cudaStreamSynchronize", KernelType.OTHER),
    ],
)  # fmt: skip
def test_kernels_are_classed_as_hta_classes_them(name: str, kind: KernelType) -> None:
    assert rules.kernel_type(name) is kind


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("all_reduce", "all_reduce"),
        ("allreduce_coalesced", "all_reduce"),
        ("_all_gather_base", "all_gather"),
        ("_reduce_scatter_base", "reduce_scatter"),
        ("AllToAll", "all_to_all"),
        ("SendRecv", "send/recv"),
        ("recv", "send/recv"),
        ("broadcast", "broadcast"),
    ],
)
def test_each_collective_has_one_name(raw: str, kind: str) -> None:
    assert rules.collective_kind(raw) == kind


def test_a_gloo_call_counts_its_input_bytes() -> None:
    # the shape of HTA's tests/data/cpu_only trace: a gloo all_reduce of 321271 floats
    call = Event("gloo:all_reduce", "user_annotation", 0.0, 10.0, "1", "2",
                 {"Input Dims": [[321271]], "Input type": ["float"]})  # fmt: skip
    assert rules.collective_call(call) == "all_reduce"
    assert rules.collective_bytes(call) == 321271 * 4


def test_c10d_message_sizes_are_used_when_recorded() -> None:
    call = Event("nccl:all_reduce", "user_annotation", 0.0, 1.0, "1", "2",
                 {"In msg nelems": 2049000, "dtype": "Float"})  # fmt: skip
    assert rules.collective_bytes(call) == 2049000 * 4


def test_merge_joins_overlapping_and_touching_intervals() -> None:
    assert iv.merge([(5, 6), (0, 2), (1, 3), (3, 4)]) == [(0, 4), (5, 6)]


def test_each_instant_counts_once_for_the_first_layer_covering_it() -> None:
    compute = [(0.0, 4.0)]
    communication = [(3.0, 6.0)]  # 1 hidden under compute, 2 exposed
    data = [(5.0, 8.0)]  # 1 under communication, 2 alone
    assert iv.by_priority([compute, communication, [], data]) == [4.0, 2.0, 0.0, 2.0]


def test_a_trace_larger_than_the_limit_is_refused_not_read() -> None:
    body = json.dumps({"traceEvents": [{"ph": "X", "name": "x" * 100, "ts": 0, "dur": 1}]})
    with pytest.raises(TraceError, match="more than 50 bytes uncompressed"):
        read_trace(gzip.compress(body.encode()), limit=50)
    with pytest.raises(TraceError, match="more than the 50 a reduction reads"):
        read_trace(body.encode(), limit=50)


def test_what_is_not_a_chrome_trace_is_a_clear_error() -> None:
    with pytest.raises(TraceError, match="not a JSON trace"):
        read_trace(b"ProfilerStep#1")
    with pytest.raises(TraceError, match="no traceEvents list"):
        read_trace(b'{"schemaVersion": 1}')
