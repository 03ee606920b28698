"""How long `distkpi --help` and `distkpi kpis` on the small example run folder take, start-up
included: what a person waits for at every command.

    python bench/cli_startup.py [--repeat 10] [--against SRC] [--smoke]

Times `python -m distkpi_cli.main --help` and `... kpis examples/seed-run`, each the best
of --repeat runs. --against SRC times the distkpi of another source tree (e.g. `git archive
main` unpacked) in the same loop, interleaved, so a change is measured against its base on
the same load. Two floors are timed in the same loop, as baselines: the bare interpreter,
and one pydantic model of one field defined and validated once (what any command that
validates its input with pydantic pays before its own work; `kpis` validates run.json and
the manifests so).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _floors import PYDANTIC_MODEL

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "distkpi --help": ["--help"],
    "distkpi kpis examples/seed-run": ["kpis", str(ROOT / "examples" / "seed-run")],
}
FLOORS = {"floor: python -c pass": "pass", "floor: one pydantic model": PYDANTIC_MODEL}


def timed(argv: list[str], src: Path | None) -> float:
    return _timed_python(["-m", "distkpi_cli.main", *argv], src)


def _timed_python(args: list[str], src: Path | None) -> float:
    # bytecode is kept as an installed package keeps it: else every run compiles the sources
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(src / d) for d in ("layers/distkpi", "cli"))
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs of each (default: 10)")
    parser.add_argument("--against", type=Path, help="another source tree, timed alongside")
    parser.add_argument("--smoke", action="store_true", help="--repeat 1: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.against is not None:
        trees.append((str(args.against), args.against))
    best = {(name, tree): float("inf") for name in COMMANDS for tree, _ in trees}
    best |= {(name, "-"): float("inf") for name in FLOORS}
    for _ in range(args.repeat):
        for name, argv in COMMANDS.items():
            for tree, src in trees:
                best[name, tree] = min(best[name, tree], timed(argv, src))
        for name, code in FLOORS.items():
            best[name, "-"] = min(best[name, "-"], _timed_python(["-c", code], None))
    print(f"command: python bench/cli_startup.py --repeat {args.repeat}", end="")
    print(" --smoke" if args.smoke else "", end="")
    print(f" --against {args.against}" if args.against else "")
    for (name, tree), seconds in best.items():
        print(f"{name:34s} {tree:24s} {seconds:.3f} s (best of {args.repeat})")


if __name__ == "__main__":
    main()
