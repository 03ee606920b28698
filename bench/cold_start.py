"""Cold import time of each Lambda handler against a bare `import boto3, aws_lambda_powertools`.

    python bench/cold_start.py [--repeat 15] [--parts] [--smoke]

`floor` is the baseline plus only the libraries the webhook is built on (the Powertools
event handler, requests, PyYAML and one pydantic model): no webhook built on them can
import faster. --parts prints each of those libraries alone on top of the baseline.

Each measurement is a fresh interpreter (as a Lambda cold start is), timing only the
imports; the median of --repeat runs is printed with its ratio to the baseline measured in
the same run, interleaved so that machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "import boto3, aws_lambda_powertools"
# What the webhook cannot do without: Powertools' event handler for the Function URL,
# requests for GitHub, YAML suites and a pydantic model to validate them.
PARTS = {
    "+pydantic": "from pydantic import BaseModel\nclass Suite(BaseModel):\n    name: str",
    "+evhandler": "import aws_lambda_powertools.event_handler",
    "+requests": "import requests",
    "+yaml": "import yaml",
}
FLOOR = "\n".join([BASELINE, *PARTS.values()])
TIMER = (
    "import time, importlib.util, sys\n"
    "t = time.perf_counter()\n"
    "{body}\n"
    "print(time.perf_counter() - t)\n"
    "print(','.join(m for m in ('pandas', 'matplotlib', 'numpy') if m in sys.modules))\n"
)


def handler_import(name: str) -> str:
    path = ROOT / "functions" / name / "app.py"
    return (
        f"spec = importlib.util.spec_from_file_location('app', {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)"
    )


def once(body: str) -> tuple[float, str]:
    env = {"POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1", "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", TIMER.format(body=body)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.splitlines()
    return float(out[0]), out[1] if len(out) > 1 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--parts", action="store_true", help="each library of the floor alone on the baseline"
    )
    parser.add_argument("--smoke", action="store_true", help="each import once: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    subjects = {"baseline": BASELINE, "floor": FLOOR}
    if args.parts:
        subjects |= {name: f"{BASELINE}\n{body}" for name, body in PARTS.items()}
    else:
        subjects |= {name: handler_import(name) for name in ("webhook", "collector", "job_events")}
    times: dict[str, list[float]] = {name: [] for name in subjects}
    heavy: dict[str, str] = {}
    for _ in range(args.repeat):
        for name, body in subjects.items():
            seconds, loaded = once(body)
            times[name].append(seconds)
            heavy[name] = loaded
    base = statistics.median(times["baseline"])
    parts = " --parts" if args.parts else ""
    if args.smoke:
        parts += " --smoke"
    print(f"command: python bench/cold_start.py --repeat {args.repeat}{parts}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(
            f"{name:10s} {median * 1000:7.1f} ms  {median / base:5.2f}x baseline  "
            f"heavy modules: {heavy[name] or 'none'}"
        )


if __name__ == "__main__":
    main()
