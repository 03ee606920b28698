"""A torch.profiler (Kineto) trace of a few steps after a warm-up, per rank, when the node
asks for one: DISTKPI_PROFILE_DIR (the folder) and DISTKPI_PROFILE_STEPS (how many steps)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import torch

WARMUP = 2  # steps profiled and thrown away: the first ones pay for allocation and caching


@contextmanager
def profiled(rank: int, env: Mapping[str, str] = os.environ) -> Iterator[Callable[[], None]]:
    """Yields the function to call after each step; writes `rank-<rank>.json` into the
    folder once the profiled steps are done. Without DISTKPI_PROFILE_DIR it does nothing."""
    folder = env.get("DISTKPI_PROFILE_DIR")
    if not folder:
        yield lambda: None
        return
    path = Path(folder) / f"rank-{rank}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    steps = int(env.get("DISTKPI_PROFILE_STEPS", "5"))
    with torch.profiler.profile(
        activities=activities,
        record_shapes=True,  # the bytes each collective moves
        schedule=torch.profiler.schedule(wait=0, warmup=WARMUP, active=steps, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as profile:
        yield profile.step
