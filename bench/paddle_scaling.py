"""How the Paddle suite scales beside the PyTorch reference job, measured in one run.

    python bench/paddle_scaling.py [--out out/bench-scaling] [--smoke]

Runs `distkpi local` on infra/suites/local.yaml (the PyTorch reference job) and then on
infra/suites/paddle.yaml (PaddlePaddle's fleet API), both on this checkout's HEAD, one after
the other on the same machine, and prints each config's throughput, speedup and efficiency
against its own suite's 1x1 (one CPU core per "GPU"). The ratio between the two frameworks'
speedups at the same worker count is the figure to compare; absolute throughputs differ by
model and framework. `--smoke` runs only the reference suite's 1x1 config with one pass over
the data, to see that it runs (the Paddle suite's own smallest config is
tests/e2e/test_paddle.py's).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from distkpi.domain.planning.suites import load_suite
from distkpi_cli.local.demo import run_local

ROOT = Path(__file__).resolve().parents[1]
SUITES = (("PyTorch reference", "local.yaml"), ("PaddlePaddle", "paddle.yaml"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/bench-scaling")
    parser.add_argument("--smoke", action="store_true", help="the reference 1x1 only, once")
    args = parser.parse_args()
    head = ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]
    sha = subprocess.run(head, capture_output=True, text=True, check=True).stdout.strip()
    print("command: python bench/paddle_scaling.py " + " ".join(sys.argv[1:]) + f"  (at {sha})")
    print(
        "| framework | config | workers | pservers | throughput (samples/s) | speedup "
        "| efficiency | status |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for framework, name in SUITES[:1] if args.smoke else SUITES:
        path = ROOT / "infra" / "suites" / name
        if args.smoke:
            path = smallest(path, Path(tempfile.mkdtemp(prefix="distkpi-bench-")))
        pservers = {c.name: c.pservers for c in load_suite(path).configs}
        result = run_local(path, Path(args.out) / name, progress=io.StringIO())
        for kpis in result.runs[0].kpis.configs:
            print(
                f"| {framework} | {kpis.name} | {kpis.gpus} | {pservers[kpis.name]} "
                f"| {_fmt(kpis.throughput, 0)} | {_fmt(kpis.speedup, 2)} "
                f"| {_fmt(kpis.efficiency, 2)} | {kpis.status.value} |",
                flush=True,
            )


def smallest(path: Path, folder: Path) -> Path:
    """The suite with only its first config, its job passing over the data once."""
    suite = yaml.safe_load(path.read_text())
    suite["configs"] = suite["configs"][:1]
    command = suite["command"]
    if "--repeat" in command:
        command[command.index("--repeat") + 1] = "1"
    (folder / path.name).write_text(yaml.safe_dump(suite))
    return folder / path.name


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
