"""How long each test tier takes, here and (with --against) in another checkout of the project
run side by side, one after the other on the same machine: wall time and the CPU seconds of
pytest and its children (less sensitive than wall time to what else the machine runs).

    python bench/test_tiers.py [--tier unit|integration|e2e ...] [--against DIR] [--workers N]
    python bench/test_tiers.py --smoke   (one small test file, in one process: that it runs)

DIR is a checkout with its own .venv (make .venv/.installed there); a checkout from before
the tiers existed runs its tests/<tier> folder (unit then has no tests/service). A tree
whose .venv has pytest-xdist runs each tier as `make` does, on --workers (default auto: a
worker per core; 0: in one process); one without runs it in one process."""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = {
    "unit": ["tests/unit", "tests/service"],
    "integration": ["tests/integration"],
    "e2e": ["tests/e2e"],
    "smoke": ["tests/unit/test_student_t.py"],
}


def has_xdist(tree: Path) -> bool:
    python = tree / ".venv" / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import xdist"], capture_output=True, check=False)
    return found.returncode == 0


def run_tier(tree: Path, tier: str, workers: str = "auto") -> dict[str, float | str]:
    paths = [p for p in TIERS[tier] if (tree / p).exists()]
    spread = ["-n", workers, "--dist", "worksteal"] if has_xdist(tree) else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [str(tree / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", *spread, *paths],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
    passed = re.search(r"(\d+) passed", tail)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "tests": float(passed.group(1)) if passed else 0.0,
        "result": tail,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", action="append", choices=sorted(TIERS))
    parser.add_argument("--against", type=Path, help="another checkout, run first")
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (0: none)")
    parser.add_argument("--smoke", action="store_true", help="one small test file: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.tier, args.workers = ["smoke"], "0"
    tiers = args.tier or ["unit", "integration"]
    trees = ([("base", args.against.resolve())] if args.against else []) + [("this", ROOT)]
    print(f"$ python bench/test_tiers.py {' '.join(sys.argv[1:])}")
    print(f"{'tier':<12} {'tree':<5} {'tests':>5} {'wall s':>8} {'cpu s':>8}  result")
    results: dict[tuple[str, str], dict[str, float | str]] = {}
    for tier in tiers:
        for label, tree in trees:
            r = results[(tier, label)] = run_tier(tree, tier, args.workers)
            print(
                f"{tier:<12} {label:<5} {int(r['tests']):>5} {r['wall_s']:>8.1f} "
                f"{r['cpu_s']:>8.1f}  {r['result']}",
                flush=True,
            )
        if args.against:
            base, this = results[(tier, "base")], results[(tier, "this")]
            wall = float(this["wall_s"]) / float(base["wall_s"])
            cpu = float(this["cpu_s"]) / float(base["cpu_s"])
            print(f"{tier:<12} ratio this/base: wall {wall:.2f}, cpu {cpu:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
