"""A paddle.profiler trace of a few steps after a warm-up, per rank, when the node asks for
one: DISTKPI_PROFILE_DIR (the folder) and DISTKPI_PROFILE_STEPS (how many steps). The
Paddle twin of infra/job/distkpi_job/profiling.py, and the same file name per rank."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

WARMUP = 2  # steps profiled and thrown away: the first ones pay for allocation and caching


@contextmanager
def profiled(rank: int, env: Mapping[str, str] = os.environ) -> Iterator[Callable[[], None]]:
    """Yields the function to call after each step; writes `rank-<rank>.json` (a Chrome
    trace) into the folder once the profiled steps are done, or when the loop ends before.
    Without DISTKPI_PROFILE_DIR it does nothing and loads no profiler."""
    folder = env.get("DISTKPI_PROFILE_DIR")
    if not folder:
        yield lambda: None
        return
    import paddle
    from paddle import profiler

    path = Path(folder) / f"rank-{rank}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    targets = [profiler.ProfilerTarget.CPU]
    if paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
        targets.append(profiler.ProfilerTarget.GPU)
    steps = int(env.get("DISTKPI_PROFILE_STEPS", "5"))
    profile = profiler.Profiler(
        targets=targets,
        scheduler=profiler.make_scheduler(closed=0, ready=WARMUP, record=steps, repeat=1),
        # no record_shapes: it breaks a static graph's feed op (the parameter-server
        # trainer's), and a dygraph's ops record no shapes with it anyway
        on_trace_ready=lambda p: p.export(str(path), format="json"),
    )
    profile.start()
    try:
        yield profile.step
    finally:
        profile.stop()
