"""How long `distkpi site` takes, and how much memory, for N runs of one model's history,
against exporting the same history as CSV (`distkpi history --format csv`), both reading
a moto server's table.

    python bench/site_build.py [--runs 1000 10000] [--page-runs 500] [--keep DIR] [--smoke]

For each N: writes N synthetic runs of the seed's four configs into a moto table
(in-process), as the publisher records them: every KPI with the range it was allowed and
its verdict, a step change in throughput half way, a regression every 97th run, and one
audited baseline reset. Then, on the same table, runs `distkpi site` (paginated Queries,
SVG charts a page of runs at a time) and the CSV export (the same Queries, no charts), each
in a process of its own, and reports their times and peak RSS: the site's is bounded by a
page of runs, not by N; the export holds every row.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import boto3
import requests
from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "distkpi"))

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository  # noqa: E402
from distkpi.domain.kpis.engine import ConfigKpis  # noqa: E402
from distkpi.domain.records import HistoryRecord, ResetRecord, SeriesRecord  # noqa: E402
from distkpi_cli.local.aws_stack import aws_environment, local_client  # noqa: E402
from distkpi_cli.local.template import load_template, table_definition  # noqa: E402

REPO, BRANCH, MODEL, TABLE = "PaddlePaddle/Paddle", "develop", "resnet50", "bench-history"
SEED = {"1x1": (1, 120.0), "1x8": (8, 720.0), "2x8-4ps": (16, 1300.0), "4x8-8ps": (32, 2400.0)}


def seed(history: HistoryRepository, runs: int) -> None:
    rng = random.Random(7)
    batch: list[HistoryRecord] = []
    for i in range(runs):
        at = f"2026-{1 + i // 10000:02d}-01T00:00:00.{i:06d}+00:00"
        step = 0.9 if i >= runs // 2 else 1.0
        sha = hashlib.sha1(str(i).encode()).hexdigest()
        for config, (gpus, total) in SEED.items():
            tput = total * step * (1 + 0.02 * rng.gauss(0, 1))
            regressed = i % 97 == 96 and config == "4x8-8ps"
            if regressed:
                tput *= 0.75
            values = {
                "throughput": tput,
                "speedup": tput / 120.0,
                "efficiency": tput / 120.0 / gpus,
                "time_to_accuracy_s": 240.0 * (1 + 0.02 * rng.gauss(0, 1)),
                "test_accuracy": 0.71,
                "trainer_gpu_memory_mib": 12000.0,
                "pserver_gpu_memory_mib": 2200.0 if "ps" in config else None,
            }
            judged = {
                kpi: {
                    "low": v * 0.94,
                    "high": v * 1.06,
                    "verdict": "regressed" if regressed and kpi == "throughput" else "pass",
                }
                for kpi, v in values.items()
                if v is not None
            }
            kpis = ConfigKpis.from_record(
                {"name": config, "gpus": gpus, "status": "ok", **values, "gpu_hours": gpus * 0.4}
            )
            batch.append(
                HistoryRecord(
                    REPO, BRANCH, MODEL, config, sha, f"run-{i:06d}", at, at, kpis, judged
                )
            )
        if len(batch) >= 2000:
            history.put(batch)
            batch = []
    history.put(batch)
    last = f"run-{runs - 1:06d}"
    history.record_series(SeriesRecord(REPO, BRANCH, MODEL, last, "success", "ok", "2099"))
    reset_at = f"2026-{1 + (runs * 3 // 4) // 10000:02d}-01T00:00:00.{runs * 3 // 4:06d}+00:00"
    history.record_reset(ResetRecord(REPO, BRANCH, MODEL, "*", "new NCCL", "bench", reset_at))


CHILD = """
import resource, sys
from distkpi_cli.main import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)
sys.exit(code)
"""


def timed(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """A distkpi command in a process of its own: its seconds, and its peak RSS (MiB)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, check=True
    )
    return time.perf_counter() - started, int(done.stderr.strip().splitlines()[-1])


def measure(runs: int, page_runs: int, keep: Path | None) -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    requests.post(f"{endpoint}/moto-api/reset", timeout=10)  # moto's state is per process
    env = {**os.environ, **aws_environment(endpoint)}
    try:
        with mock.patch.dict(os.environ, aws_environment(endpoint)):
            template = load_template((ROOT / "template.yaml").read_text())
            local_client(endpoint, "dynamodb").create_table(
                **table_definition(template, "RunsTable", TABLE)
            )
            resource = boto3.resource("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
            started = time.perf_counter()
            seed(HistoryRepository(DynamoTable(TABLE, resource.Table(TABLE))), runs)
            seeded = time.perf_counter() - started
        out = keep / f"site-{runs}" if keep else Path(tempfile.mkdtemp(prefix="distkpi-site-"))
        on_table = ["--table", TABLE, "--endpoint-url", endpoint]
        site_s, site_mib = timed(
            ["site", "--out", str(out), "--page-runs", str(page_runs), *on_table], env
        )
        csv = ["history", "--repo", REPO, "--model", MODEL, "--format", "csv", "--out", "/dev/null"]
        csv_s, csv_mib = timed([*csv, *on_table], env)
        pages = len(list(out.glob("*.html"))) - 1
        if keep is None:
            shutil.rmtree(out)
    finally:
        server.stop()
    print(
        f"| {runs} | {pages} | {site_s:.1f} | {site_s / runs * 1000:.1f} | {site_mib} | "
        f"{csv_s:.1f} | {csv_mib} | {site_s / csv_s:.2f}x | {seeded:.0f} |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--page-runs", type=int, default=500)
    parser.add_argument("--keep", type=Path, help="keep the sites built here")
    parser.add_argument("--smoke", action="store_true", help="20 runs: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.page_runs = [20], 10
    print(
        f"$ python bench/site_build.py --runs {' '.join(map(str, args.runs))} "
        f"--page-runs {args.page_runs}{' --smoke' if args.smoke else ''}"
    )
    print(
        "| runs | pages | `distkpi site` (s) | ms per run | its peak RSS (MiB) "
        "| CSV export (s) | its peak RSS (MiB) | site / CSV | seeding (s) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for runs in args.runs:
        measure(runs, args.page_runs, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
