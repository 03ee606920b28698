"""How fast `distkpi kpis` reads a huge trainer log, against grep on the same file.

    python bench/parse_throughput.py [--mb 400] [--repeat 3] [--keep DIR]

Generates a run folder whose trainer log is at least --mb megabytes of mixed lines (mostly
glog noise, with :::MLLOG and PaddlePaddle lines), then times, in the same run and on the
same (page-cached) file, `distkpi kpis RUN --json` and a plain scan for the lines that
matter, `grep -c -E 'MLLOG|Pass|img/sec|images/sec|examples/se|metrics_data|kpis'`.
Prints MB/s of each, the ratio of their best times, and the peak RSS of distkpi.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GREP_PATTERN = "MLLOG|Pass|img/sec|images/sec|examples/se|metrics_data|kpis"
BLOCK_LINES = 8000


def noise_block(rng: random.Random, block: int) -> str:
    ops = ("conv2d_grad", "batch_norm", "elementwise_add", "relu_grad", "fetch", "sgd")
    lines = []
    for i in range(BLOCK_LINES):
        lines.append(
            f"I1130 12:{block // 60 % 60:02d}:{block % 60:02d}.{i:06d} {1200 + i % 40} "
            f"executor.cc:{100 + i % 90}] Run op {rng.choice(ops)} on CUDAPlace({i % 8}) "
            f"inputs X[64, {rng.randrange(16, 2048)}, 7, 7] took {rng.random():.6f} ms"
        )
    step = block * 100
    lines.insert(
        BLOCK_LINES // 3,
        f"Pass = {block}, Iters = {step}, Loss = 1.2, Accuracy = 0.5, Speed = "
        f"{rng.uniform(110, 130):.2f} img/s",
    )
    record = {
        "key": "tracked_stats",
        "value": {"throughput": round(rng.uniform(110, 130), 2)},
        "time_ms": 1_700_000_000_000 + block * 1000,
        "metadata": {"step": block},
    }
    lines.insert(BLOCK_LINES // 2, ":::MLLOG " + json.dumps(record))
    record = {
        "key": "eval_accuracy",
        "value": min(0.99, 0.1 + block / 2000),
        "time_ms": 1_700_000_000_000 + block * 1000,
        "metadata": {"epoch_num": block},
    }
    lines.insert(BLOCK_LINES - 10, ":::MLLOG " + json.dumps(record))
    return "\n".join(lines) + "\n"


def make_run(root: Path, megabytes: int) -> Path:
    rng = random.Random(1)
    log = root / "1x1" / "trainer-0.log"
    log.parent.mkdir(parents=True)
    start = {"key": "run_start", "value": None, "time_ms": 1_700_000_000_000}
    with log.open("w") as out:
        out.write(":::MLLOG " + json.dumps(start) + "\n")
        block = 0
        while out.tell() < megabytes * 1_000_000:
            out.write(noise_block(rng, block))
            block += 1
    (root / "run.json").write_text(
        json.dumps(
            {
                "schema": 1,
                "run_id": "bench",
                "repo": "bench/bench",
                "sha": "0" * 40,
                "ref": "refs/heads/develop",
                "model": "bench",
                "target_accuracy": 0.6,
                "accuracy_pass": 3,
                "accuracy_tolerance": 0.001,
                "configs": [
                    {
                        "name": "1x1",
                        "trainers": 1,
                        "gpus_per_trainer": 1,
                        "pservers": 0,
                        "batch_size": 64,
                        "nodes": 1,
                    }
                ],
            }
        )
    )
    (root / "1x1" / "node-0.json").write_text(
        json.dumps(
            {
                "schema": 1,
                "node": 0,
                "exit_code": 0,
                "started_at": "2026-11-30T00:00:00Z",
                "finished_at": "2026-11-30T01:00:00Z",
                "files": [{"path": "trainer-0.log", "role": "trainer", "rank": 0, "kind": "log"}],
            }
        )
    )
    return log


def timed(argv: list[str]) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS in KiB, and stdout of one run of argv."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed with {proc.returncode}")
    return elapsed, usage.ru_maxrss, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="trainer log size in MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate here and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="distkpi-bench-"))
    try:
        run_dir = root / "run"
        log = make_run(run_dir, args.mb)
        size_mb = log.stat().st_size / 1e6
        distkpi = [sys.executable, "-m", "distkpi_cli.main", "kpis", str(run_dir), "--json"]
        grep = ["grep", "-c", "-E", GREP_PATTERN, str(log)]
        timed(grep)  # warm the page cache for both
        ours, theirs, rss = [], [], 0
        for _ in range(args.repeat):
            seconds, peak, out = timed(distkpi)
            ours.append(seconds)
            rss = max(rss, peak)
            theirs.append(timed(grep)[0])
        result = json.loads(out)["configs"]["1x1"]
        best_ours, best_grep = min(ours), min(theirs)
        print(f"command: python bench/parse_throughput.py --mb {args.mb} --repeat {args.repeat}")
        print(f"trainer log: {size_mb:.0f} MB; parsed throughput {result['throughput']:.2f}")
        print(
            f"distkpi kpis: {best_ours:.2f} s  {size_mb / best_ours:.0f} MB/s  "
            f"peak RSS {rss / 1024:.1f} MiB"
        )
        print(f"grep -c -E:   {best_grep:.2f} s  {size_mb / best_grep:.0f} MB/s")
        print(f"ratio distkpi/grep: {best_ours / best_grep:.2f}x (best of {args.repeat})")
    finally:
        if args.keep is None:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
