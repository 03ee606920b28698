"""What an event of a trace is: HTA's kernel classes, collectives, steps and data loading.

The kernel patterns are Holistic Trace Analysis' (`hta/common/types.py`:
`CommunicateKernelGroupingPattern`, `MemoryKernelGroupingPattern`,
`ComputeKernelGroupingPattern`, `KERNEL_CATEGORY_PATTERN`; `hta/utils/utils.py`:
`get_kernel_type`), matched the same way (`re.match`, the compute one inverted).

A Paddle trace (`paddle.profiler`'s Chrome trace, read by `trace.read_trace` with its names'
`[1.234 ms]` suffix taken off) says the same things in its own categories: `ProfileStep#N`
steps, `Operator` ops (their `OperatorInner` parts left out, as Kineto's ops' children are
ops too), a `Dataloader` span per batch fetched, `Forward`/`Backward`/`Optimization` and the
user's `RecordEvent` regions as annotations, `Kernel`/`Memcpy`/`Memset` on a GPU, and
communication where its own profiler summary finds it (`profiler_statistic.py`: a
`Communication` event, or an `Operator` whose name holds `allreduce`, `broadcast` or
`rpc`, such as `c_allreduce_sum`)."""

from __future__ import annotations

import re
from enum import StrEnum
from math import prod

from distkpi.domain.diagnosis.trace import Event

GPU_CATEGORY = re.compile(r"(kernel)|(gpu_mem.+)|(mtia_ccp_events)")
PADDLE_DEVICE = frozenset({"Kernel", "Memcpy", "Memset"})
COMMUNICATION_KERNEL = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEMORY_KERNEL = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
NOT_COMPUTE_KERNEL = re.compile(
    r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)"
    r"|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)"
    r"|(^collective_subgraph_execution)"
)
PROFILER_STEP = re.compile(r"^Profiler?Step#(\d+)")  # Kineto's ProfilerStep#, Paddle's ProfileStep#
DATA_LOADER = re.compile(r"^enumerate\(DataLoader\)#")
HOST_OPS = frozenset({"cpu_op", "Operator"})
ANNOTATIONS = frozenset(
    {"user_annotation", "PythonUserDefined", "UserDefined", "Forward", "Backward",
     "Optimization", "PythonOp"}
)  # fmt: skip
# Paddle's `_CommunicationOpName`; a static graph's op is `c_allreduce_sum`, `c_broadcast`
PADDLE_COMMUNICATION_OP = re.compile(r"allreduce|broadcast|rpc", re.IGNORECASE)
PADDLE_OP_PREFIX = re.compile(r"^(c|mp)_")  # c_allreduce_sum, mp_allreduce_sum
# the host-side span of a collective, as c10d records it: `nccl:all_reduce`, `gloo:broadcast`
COLLECTIVE_CALL = re.compile(r"^(nccl|gloo|mpi|ucc|hccl|xccl):(\w+)$")
# torch.distributed.rpc's span of a call, send to answer: `rpc_async#pull(trainer0 -> ps0)`
RPC_CALL = re.compile(r"^rpc_(async|sync|remote)#")
KERNEL_COLLECTIVE = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")
DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "c10::half": 2, "half": 2,
    "float16": 2, "c10::bfloat16": 2, "bfloat16": 2, "long": 8, "long int": 8, "int64": 8,
    "int": 4, "int32": 4, "short": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "int8": 1, "uint8": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
}  # fmt: skip


class KernelType(StrEnum):
    COMMUNICATION = "communication"
    MEMORY = "memory"
    COMPUTATION = "computation"
    OTHER = "other"


def is_device(event: Event) -> bool:
    """A kernel, memcpy or memset on a GPU stream (HTA's `KERNEL_CATEGORY_PATTERN`)."""
    return GPU_CATEGORY.match(event.cat) is not None or event.cat in PADDLE_DEVICE


def kernel_type(name: str) -> KernelType:
    """HTA's `get_kernel_type`: communication, then memory, then computation, else other."""
    if COMMUNICATION_KERNEL.match(name):
        return KernelType.COMMUNICATION
    if MEMORY_KERNEL.match(name):
        return KernelType.MEMORY
    if not NOT_COMPUTE_KERNEL.match(name):
        return KernelType.COMPUTATION
    return KernelType.OTHER


def is_host(event: Event) -> bool:
    return not event.cat.startswith("gpu_") and not is_device(event)


def is_step(event: Event) -> bool:
    return is_host(event) and PROFILER_STEP.match(event.name) is not None


def is_data_loading(event: Event) -> bool:
    return is_host(event) and (
        DATA_LOADER.match(event.name) is not None or event.cat == "Dataloader"
    )


def is_annotation(event: Event) -> bool:
    """A region of host time an op need not cover: the user's, or the framework's own."""
    return event.cat in ANNOTATIONS


def collective_call(event: Event) -> str | None:
    """The kind of a host-side collective span (`gloo:all_reduce` -> all_reduce), else None."""
    if not is_host(event):
        return None
    if event.cat == "Communication" or (
        event.cat == "Operator" and PADDLE_COMMUNICATION_OP.search(event.name)
    ):
        return collective_kind(PADDLE_OP_PREFIX.sub("", event.name.split(" ")[0]))
    found = COLLECTIVE_CALL.match(event.name)
    return collective_kind(found.group(2)) if found else None


def is_rpc_call(event: Event) -> bool:
    """A parameter-server pull or push (or any other RPC) as the caller records it."""
    return is_host(event) and RPC_CALL.match(event.name) is not None


def kernel_collective(name: str) -> str:
    """The kind an NCCL kernel runs (`ncclKernel_AllReduce_RING_LL_Sum_float` -> all_reduce)."""
    found = KERNEL_COLLECTIVE.search(name)
    return collective_kind(found.group(1)) if found else "other"


def collective_kind(raw: str) -> str:
    """One name per collective, whatever spelling c10d, gloo or NCCL gives it."""
    key = raw.lower().replace("_", "")
    for stem, kind in (
        ("allreduce", "all_reduce"),
        ("allgather", "all_gather"),
        ("reducescatter", "reduce_scatter"),
        ("alltoall", "all_to_all"),
        ("broadcast", "broadcast"),
        ("sendrecv", "send/recv"),
        ("send", "send/recv"),
        ("recv", "send/recv"),
        ("barrier", "barrier"),
        ("reduce", "reduce"),
        ("gather", "gather"),
        ("scatter", "scatter"),
    ):
        if key.startswith(stem):
            return kind
    return key or "other"


def collective_bytes(event: Event) -> int:
    """The bytes a collective call moves in: its first input's elements times their size
    (`Input Dims`, `Input type`), or `In msg nelems` and `dtype` where c10d records those."""
    args = event.args
    nelems, dtype = args.get("In msg nelems"), args.get("dtype")
    if isinstance(nelems, int) and isinstance(dtype, str):
        return nelems * DTYPE_BYTES.get(dtype.lower(), 0)
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not (isinstance(dims, list) and isinstance(types, list) and dims and types):
        return 0
    first, kind = dims[0], types[0]
    if not isinstance(first, list) or not all(isinstance(d, int) for d in first):
        return 0
    if not isinstance(kind, str):
        return 0
    return prod(first) * DTYPE_BYTES.get(kind.lower(), 0) if first else 0


def is_host_op(event: Event) -> bool:
    return event.cat in HOST_OPS
