"""What a diagnosis costs: the reduction's time and memory on the largest real trace, and the
size of the reference job's traces per rank and per profiled step.

    python bench/diagnosis.py [--repeat 3] [--skip-job] [--cost EPOCHS]

The reduction (read + reduce, in a fresh interpreter per run so that peak RSS is its own)
runs on tests/data/traces/trace_diff/control.json.gz, an 8-GPU NCCL rank from HTA's tests.
The reference job is run as one trainer node with two CPU workers (gloo), profiled for 1
and for 6 steps: the difference over 5 is the bytes per profiled step and rank.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LARGEST = ROOT / "tests" / "data" / "traces" / "trace_diff" / "control.json.gz"
REDUCE = (
    "import gzip, json, resource, sys, time\n"
    "from distkpi.domain.diagnosis.trace import read_trace\n"
    "from distkpi.domain.diagnosis.breakdown import reduce_trace\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "trace = read_trace(data)\n"
    "read = time.perf_counter() - t\n"
    "r = reduce_trace(trace)\n"
    "total, cpu = time.perf_counter() - t, time.process_time() - c\n"
    "print(json.dumps({'read_s': read, 'total_s': total, 'cpu_s': cpu,\n"
    "  'events': len(trace.events),\n"
    "  'json_bytes': len(gzip.decompress(data)),\n"
    "  'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
)


def reduction(repeat: int) -> None:
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", REDUCE, str(LARGEST)],
                cwd=ROOT, capture_output=True, text=True, check=True,
                env={**os.environ, "PYTHONPATH": f"{ROOT / 'cli'}:{ROOT / 'layers' / 'distkpi'}"},
            ).stdout
        )
        for _ in range(repeat)
    ]  # fmt: skip
    first = runs[0]
    print(
        f"reduction of {LARGEST.relative_to(ROOT)}: {LARGEST.stat().st_size} bytes gzip, "
        f"{first['json_bytes']} bytes JSON, {first['events']} complete events"
    )
    print(
        f"  read {statistics.median(r['read_s'] for r in runs):.2f} s, read + reduce "
        f"{statistics.median(r['total_s'] for r in runs):.2f} s (CPU "
        f"{statistics.median(r['cpu_s'] for r in runs):.2f} s; medians of {repeat}), "
        f"peak RSS {max(r['peak_rss_mib'] for r in runs):.0f} MiB"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def job_traces(steps: int | None, epochs: int = 1) -> tuple[list[int], float]:
    """The reference job's traces (bytes per rank) profiled for ``steps`` (None: not
    profiled), and its wall time."""
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "DISTKPI_NODE_INDEX": "0", "DISTKPI_NUM_NODES": "1", "DISTKPI_ROLE": "trainer",
            "DISTKPI_ROLE_RANK": "0", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()), "DISTKPI_TRAINERS": "1",
            "DISTKPI_GPUS_PER_TRAINER": "2", "DISTKPI_BATCH_SIZE": "64",
            "DISTKPI_EPOCHS": str(epochs),
        }  # fmt: skip
        if steps is not None:
            env |= {"DISTKPI_PROFILE_DIR": folder, "DISTKPI_PROFILE_STEPS": str(steps)}
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "infra/job/reference.py", "--repeat", "1"],
            cwd=ROOT, env=env, capture_output=True, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        return [p.stat().st_size for p in sorted(Path(folder).iterdir())], wall


def job() -> None:
    (one, _), (six, _) = job_traces(1), job_traces(6)
    per_step = [(b - a) / 5 for a, b in zip(one, six, strict=True)]
    print("reference job (1 trainer x 2 CPU workers, defaults --features 512 --hidden 1024):")
    print(f"  trace per rank, 1 profiled step: {one} bytes; 6 steps: {six} bytes")
    print(f"  per profiled step and rank: {[round(b) for b in per_step]} bytes")


def cost(repeat: int, epochs: int) -> None:
    """A diagnosis job runs the command twice (base, head), each profiled for 5 steps; the
    config's own job runs it once, unprofiled. GPU-hours are the GPUs times the wall time,
    so the ratio of their walls is the ratio of their GPU-hours (setups and checkouts
    aside)."""
    plain = [job_traces(None, epochs)[1] for _ in range(repeat)]
    profiled = [job_traces(5, epochs)[1] for _ in range(repeat)]
    p, q = statistics.median(plain), statistics.median(profiled)
    print(f"reference job, {epochs} epoch(s), medians of {repeat}:")
    print(f"  unprofiled {p:.1f} s, profiled for 5 steps {q:.1f} s (+{(q / p - 1) * 100:.0f}%)")
    print(f"  a diagnosis job of the config (base + head, profiled): {2 * q / p:.2f}x its job")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-job", action="store_true")
    p.add_argument(
        "--cost",
        type=int,
        metavar="EPOCHS",
        default=0,
        help="also time the reference job unprofiled against profiled",
    )
    p.add_argument("--smoke", action="store_true", help="one reduction, no job: that it runs")
    args = p.parse_args()
    if args.smoke:
        args.repeat, args.skip_job = 1, True
        print("command: python bench/diagnosis.py --smoke")
    else:
        print(f"command: python bench/diagnosis.py --repeat {args.repeat}"
              + (" --skip-job" if args.skip_job else "")
              + (f" --cost {args.cost}" if args.cost else ""))  # fmt: skip
    reduction(args.repeat)
    if not args.skip_job:
        job()
    if args.cost:
        cost(args.repeat, args.cost)


if __name__ == "__main__":
    main()
