"""How fast `distkpi kpis` reads a huge trainer log, against grep on the same file.

    python bench/parse_throughput.py [--mb 400] [--repeat 3] [--keep DIR] [--against SRC]
                                     [--declared]

Generates a run folder whose trainer log is at least --mb megabytes of mixed lines (mostly
glog noise, with :::MLLOG and PaddlePaddle lines), then times, in the same run and on the
same (page-cached) file, `distkpi kpis RUN --json` and a plain scan for the lines that
matter, `grep -c -E 'MLLOG|Pass|img/sec|images/sec|examples/se|metrics_data|kpis'`, and
`sha256sum` (what the digest check would add if it ran in series with the parse), and a
floor: a Python process that validates one pydantic model and takes the log's sha256 with
hashlib, the least `distkpi kpis` can take (the node's manifest names the log's sha256, as a
real node's does, so `distkpi kpis` checks it, and it validates run.json and the manifests
with pydantic). Prints MB/s of each, the ratio of their best times, and the peak RSS of
distkpi.

--against SRC also times the distkpi of another source tree (e.g. `git archive main` unpacked)
in the same loop, interleaved, so a change is measured against its base on the same load.
--declared gives run.json a suite's own throughput pattern (`metrics:`), read by RE2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _floors import PYDANTIC_MODEL_AND_SHA256

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


DECLARED = {"throughput": {"pattern": r"Speed = (?P<value>[0-9.]+) img/s", "per": "process"}}


def make_run(root: Path, megabytes: int, declared: bool = False) -> Path:
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
                **({"metrics": DECLARED} if declared else {}),
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
                "files": [
                    {
                        "path": "trainer-0.log",
                        "role": "trainer",
                        "rank": 0,
                        "kind": "log",
                        "sha256": _sha256(log),
                    }
                ],
            }
        )
    )
    return log


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def cli_of(src: Path, argv: list[str]) -> list[str]:
    """``argv`` for the tree ``src``: before the CLI left the layer it was distkpi.cli."""
    if (src / "layers" / "distkpi" / "distkpi" / "cli.py").is_file():
        return [a if a != "distkpi_cli.main" else "distkpi.cli" for a in argv]
    return argv


def timed(argv: list[str], src: Path | None = None) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS in KiB, and stdout of one run of argv (with the distkpi of
    the source tree ``src`` first on the path, when given)."""
    # bytecode is kept as an installed package keeps it: else every run compiles the sources
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        path = os.pathsep.join(str(src / d) for d in ("layers/distkpi", "cli"))
        env["PYTHONPATH"] = path
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed with {proc.returncode}")
    return elapsed, usage.ru_maxrss, out


def report(
    args: argparse.Namespace,
    size_mb: float,
    result: dict[str, Any],
    *,
    best_ours: float,
    rss: int,
    best: dict[str, float],
    base: list[float],
) -> None:
    """Print the command that reproduces the figures, then each program's best time."""
    best_grep, best_digest, best_floor = best["grep"], best["sha256sum"], best["floor"]
    flags = " --declared" if args.declared else ""
    flags += " --smoke" if args.smoke else ""
    flags += f" --against {args.against}" if args.against is not None else ""
    print(
        f"command: python bench/parse_throughput.py --mb {args.mb} --repeat {args.repeat}" + flags
    )
    print(f"trainer log: {size_mb:.0f} MB; parsed throughput {result['throughput']:.2f}")
    print(
        f"distkpi kpis: {best_ours:.2f} s  {size_mb / best_ours:.0f} MB/s  "
        f"peak RSS {rss / 1024:.1f} MiB"
    )
    print(f"grep -c -E:   {best_grep:.2f} s  {size_mb / best_grep:.0f} MB/s")
    print(f"sha256sum:    {best_digest:.2f} s  {size_mb / best_digest:.0f} MB/s")
    print(
        f"floor, one pydantic model + hashlib sha256: {best_floor:.2f} s  "
        f"ratio to grep {best_floor / best_grep:.2f}x"
    )
    print(f"ratio distkpi/grep: {best_ours / best_grep:.2f}x (best of {args.repeat})")
    if base:
        best_base = min(base)
        print(
            f"distkpi kpis of {args.against}: {best_base:.2f} s  "
            f"{size_mb / best_base:.0f} MB/s  ratio to grep {best_base / best_grep:.2f}x; "
            f"this tree / that: {best_ours / best_base:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="trainer log size in MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate here and keep it")
    parser.add_argument("--against", type=Path, help="another source tree, timed alongside")
    parser.add_argument("--declared", action="store_true", help="a suite pattern for throughput")
    parser.add_argument("--smoke", action="store_true", help="--mb 8 --repeat 1: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.mb, args.repeat = 8, 1
    root = args.keep or Path(tempfile.mkdtemp(prefix="distkpi-bench-"))
    try:
        run_dir = root / "run"
        log = make_run(run_dir, args.mb, args.declared)
        size_mb = log.stat().st_size / 1e6
        distkpi = [sys.executable, "-m", "distkpi_cli.main", "kpis", str(run_dir), "--json"]
        grep = ["grep", "-c", "-E", GREP_PATTERN, str(log)]
        sha256sum = ["sha256sum", str(log)]
        floor = [sys.executable, "-c", PYDANTIC_MODEL_AND_SHA256, str(log)]
        timed(grep)  # warm the page cache for all three
        others = {"grep": grep, "sha256sum": sha256sum, "floor": floor}
        ours, best, rss, out = [], dict.fromkeys(others, float("inf")), 0, b""
        base: list[float] = []
        for _ in range(args.repeat):
            seconds, peak, out = timed(distkpi)
            ours.append(seconds)
            rss = max(rss, peak)
            for name, argv in others.items():
                best[name] = min(best[name], timed(argv)[0])
            if args.against is not None:
                base.append(timed(cli_of(args.against, distkpi), args.against)[0])
        result = json.loads(out)["configs"]["1x1"]
        if result["status"] != "ok":
            raise SystemExit(f"the log was not read: {result['problems']}")
        report(args, size_mb, result, best_ours=min(ours), rss=rss, best=best, base=base)
    finally:
        if args.keep is None:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
