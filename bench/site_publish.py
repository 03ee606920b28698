"""What publishing one run into the history site costs, per run of history: the per-run
update of the site's JSON files (services/site.py) beside the full rebuild the sweeper did
before it (distkpi_cli/site_pages.py's SVG pages), both on a moto server over HTTP.

    python bench/site_publish.py [--runs 100 10000 100000] [--old 100 1000] [--rate 100]
                                 [--publishes 3] [--smoke]

For each N of --runs: the bucket's site/api/ is seeded with N runs of one model's history
(the seed's four configs, --rate runs a day), as `distkpi site --rebuild` writes it, ending
248 runs into a month so that the next publishes write into a part of the month's chunk
as full as parts get (about 1,000 points); then --publishes new runs are published one
after the other, each a real evaluation of the seed's suite, through
SitePublisher on S3 (conditional writes) with the resets and the regressions read from the
table, as the stack builds it; every other one regressed (its regression item made before,
as the alert step makes it), so that its publish writes regressions.json, which the others
only read. Reported: the median and the slowest publish's wall time, and the S3 and
DynamoDB requests each made (the DynamoDB Queries among them; a column with two figures,
such as 8/9, gives each count seen).
For each N of --old: the same history in the table, and one full rebuild of the old pages
(what the sweeper did for every history with a new run), its time and requests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import requests
from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "distkpi"))

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository  # noqa: E402
from distkpi.adapters.dynamo.regressions import RegressionRepository  # noqa: E402
from distkpi.adapters.s3_runs import S3RunStore  # noqa: E402
from distkpi.domain.github.webhook import Trigger  # noqa: E402
from distkpi.domain.judging.evaluation import evaluate  # noqa: E402
from distkpi.domain.kpis.engine import ConfigKpis, RunKpis  # noqa: E402
from distkpi.domain.planning.jobs import run_spec_for  # noqa: E402
from distkpi.domain.planning.suites import load_suite  # noqa: E402
from distkpi.domain.records import HistoryRecord, RunRecord, SeriesRecord  # noqa: E402
from distkpi.domain.regressions import Regression  # noqa: E402
from distkpi.reporting import api  # noqa: E402
from distkpi.reporting.app_files import AppFiles  # noqa: E402
from distkpi.services.site import BucketSite, SitePublisher, rebuild  # noqa: E402
from distkpi_cli.local.aws_stack import aws_environment, local_client  # noqa: E402
from distkpi_cli.local.template import load_template, table_definition  # noqa: E402

REPO, BRANCH, MODEL = "PaddlePaddle/Paddle", "develop", "resnet50"
TABLE, BUCKET = "bench-site", "bench-site-bucket"
SEED = {"1x1": (1, 120.0), "1x8": (8, 720.0), "2x8-4ps": (16, 1300.0), "4x8-8ps": (32, 2400.0)}
# the history ends 248 runs into a month: the first publishes write a part as full as a
# part gets (about CHUNK_POINTS points), the dearest case, whatever N is
MONTH = datetime(2026, 11, 1, tzinfo=UTC)
FILLED = 248
SUITE = load_suite(ROOT / "infra" / "suites" / "resnet50.yaml")
APP = AppFiles({}, "bench")  # the application's copy is a deploy's cost, not a run's


def at(i: int, rate: int, runs: int) -> str:
    """Run i of ``runs`` (later ones published after them), ``rate`` a day."""
    return (MONTH + timedelta(days=(i - runs + FILLED) / rate)).isoformat(timespec="milliseconds")


def config_values(config: str, i: int, rng: random.Random) -> dict[str, Any]:
    gpus, total = SEED[config]
    tput = total * (1 + 0.02 * rng.gauss(0, 1))
    return {
        "name": config,
        "gpus": gpus,
        "status": "ok",
        "throughput": tput,
        "speedup": tput / 120.0,
        "efficiency": tput / 120.0 / gpus,
        "time_to_accuracy_s": 240.0 * (1 + 0.02 * rng.gauss(0, 1)),
        "test_accuracy": 0.71,
        "trainer_gpu_memory_mib": 12000.0,
        "pserver_gpu_memory_mib": 2200.0 if "ps" in config else None,
        "gpu_hours": gpus * 0.4,
        "hardware": "p4d.24xlarge/A100-SXM4-40GB",
    }


class SyntheticHistory:
    """N runs of the seed's configs, newest first, as the table would give them."""

    def __init__(self, runs: int, rate: int) -> None:
        self.runs, self.rate = runs, rate

    def history(self, *_: Any, **__: Any) -> Iterator[HistoryRecord]:
        for i in reversed(range(self.runs)):
            rng = random.Random(i)
            sha = hashlib.sha1(str(i).encode()).hexdigest()
            when = at(i, self.rate, self.runs)
            for config in SEED:
                values = config_values(config, i, rng)
                judged = {
                    k: {"low": v * 0.94, "high": v * 1.06, "verdict": "pass"}
                    for k, v in values.items()
                    if k in ("throughput", "speedup", "efficiency") and v is not None
                }
                yield HistoryRecord(
                    REPO,
                    BRANCH,
                    MODEL,
                    config,
                    sha,
                    f"run-{i:06d}",
                    when,
                    when,
                    ConfigKpis.from_record(values),
                    judged,
                    verdict="success",
                )

    def resets(self, *_: Any) -> list[Any]:
        return []

    def series(self, repo: str | None = None) -> list[SeriesRecord]:
        del repo
        last = f"run-{self.runs - 1:06d}"
        finished = at(self.runs - 1, self.rate, self.runs)
        return [SeriesRecord(REPO, BRANCH, MODEL, last, "success", "ok", finished)]


def new_run(i: int, rate: int, runs: int) -> RunRecord:
    """Run i, judged by the suite against nothing (the publish does not read the history)."""
    sha = hashlib.sha1(f"new-{i}".encode()).hexdigest()
    trigger = Trigger(REPO, sha, f"refs/heads/{BRANCH}", BRANCH, "push", BRANCH)
    run_id = f"run-{i:06d}"
    rng = random.Random(i)
    kpis = RunKpis.from_json(
        {
            "run_id": run_id,
            "model": MODEL,
            "base_config": "1x1",
            "configs": {c: config_values(c, i, rng) for c in SEED},
        }
    )
    when = at(i, rate, runs)
    return RunRecord(
        run_id=run_id,
        trigger=trigger,
        model=MODEL,
        spec=run_spec_for(run_id, trigger, SUITE),
        delivery="bench",
        verdict_settings=SUITE.verdict,
        created_at=when,
        configs_total=len(SEED),
        evaluation=evaluate(kpis, [], SUITE.verdict, SUITE.accuracy_tolerance),
        finished_at=when,
    )


class Requests:
    """Counts the HTTP requests a boto3 client sends, by service, and DynamoDB's by
    operation too ("dynamodb Query": its X-Amz-Target names it)."""

    def __init__(self) -> None:
        self.sent: dict[str, int] = {}

    def watch(self, client: Any, service: str) -> Any:
        def count(request: Any, **_: Any) -> None:
            self.sent[service] = self.sent.get(service, 0) + 1
            target = request.headers.get("X-Amz-Target") or b""
            if target:
                name = target.decode() if isinstance(target, bytes) else str(target)
                operation = f"{service} {name.rsplit('.', 1)[-1]}"
                self.sent[operation] = self.sent.get(operation, 0) + 1

        client.meta.events.register("before-send", count)
        return client

    def take(self) -> dict[str, int]:
        taken, self.sent = self.sent, {}
        return taken


def stack(endpoint: str) -> tuple[Any, Any]:
    requests.post(f"{endpoint}/moto-api/reset", timeout=10)
    template = load_template((ROOT / "template.yaml").read_text())
    local_client(endpoint, "dynamodb").create_table(
        **table_definition(template, "RunsTable", TABLE)
    )
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    dynamodb = boto3.resource("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return s3, dynamodb


def opened_by(run: RunRecord) -> Regression:
    """The regression the alert step opens, before the site's step, for a run whose
    4x8-8ps throughput fell out of its range: regressions.json changes with it."""
    return Regression(
        REPO, BRANCH, MODEL, "4x8-8ps", "throughput", run.run_id, run.trigger.sha,
        run.finished_at or "", 2000.0, 2400.0, 2300.0, 2500.0,
    )  # fmt: skip


def publish_row(endpoint: str, runs: int, rate: int, publishes: int) -> str:
    s3, dynamodb = stack(endpoint)
    ledger = RegressionRepository(DynamoTable(TABLE, dynamodb.Table(TABLE)))  # not counted
    started = time.perf_counter()
    built = rebuild(
        SyntheticHistory(runs, rate), BucketSite(S3RunStore(BUCKET, s3)), change_points=False
    )
    seeded = time.perf_counter() - started
    counted = Requests()
    watched = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    store = S3RunStore(BUCKET, counted.watch(watched, "s3"))
    resource = boto3.resource("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    table = DynamoTable(TABLE, resource.Table(TABLE))
    counted.watch(resource.meta.client, "dynamodb")
    # as the stack builds it (entry/root.py): the resets and the regressions from the table
    site = SitePublisher(
        store,
        HistoryRepository(table).resets,
        app=lambda: APP,
        regressions=RegressionRepository(table).of_branch,
    )
    run = new_run(runs - 1, rate, runs)  # the last seeded, again: the index gets its app key
    site.publish(run, *_evaluated(run))
    counted.take()
    times, sent, parts = [], [], []
    for k in range(publishes):
        run = new_run(runs + k, rate, runs)
        if k % 2 == 0:  # every other run regressed: its publish writes regressions.json
            ledger.create(opened_by(run))
        began = time.perf_counter()
        site.publish(run, *_evaluated(run))
        times.append(time.perf_counter() - began)
        sent.append(counted.take())
        key = "site/api/" + api.series_path(REPO, BRANCH, MODEL)
        head = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
        parts.append(max(c["points"] for c in head["chunks"] if c["to"] == run.finished_at))
    listed = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="site/api/")
    largest = max(o["Size"] for page in listed for o in page.get("Contents", []))
    s3_requests = sorted({s.get("s3", 0) for s in sent})
    dynamo = sorted({s.get("dynamodb", 0) for s in sent})
    queries = sorted({s.get("dynamodb Query", 0) for s in sent})
    return (
        f"| {runs} | {built.chunks} | {statistics.median(times) * 1000:.0f} | "
        f"{max(times) * 1000:.0f} | {'/'.join(map(str, s3_requests))} | "
        f"{'/'.join(map(str, dynamo))} | {'/'.join(map(str, queries))} | {max(parts)} | "
        f"{largest / 1e6:.2f} | {seeded:.0f} |"
    )


def _evaluated(run: RunRecord) -> tuple[Any, list[HistoryRecord]]:
    from distkpi.services.publish import history_records

    assert run.evaluation is not None
    return run.evaluation, history_records(run, run.evaluation)


def old_row(endpoint: str, runs: int, rate: int) -> str:
    from distkpi_cli.site_pages import REPORT_URL, build_series, write_index

    s3, dynamodb = stack(endpoint)
    table = DynamoTable(TABLE, dynamodb.Table(TABLE))
    history = HistoryRepository(table)
    synthetic = SyntheticHistory(runs, rate)  # as published
    batch: list[HistoryRecord] = []
    for record in synthetic.history():
        batch.append(record)
        if len(batch) >= 2000:
            history.put(batch)
            batch = []
    history.put(batch)
    (series,) = synthetic.series()
    history.record_series(series)
    counted = Requests()
    counted.watch(s3, "s3")
    counted.watch(dynamodb.meta.client, "dynamodb")
    site = BucketSite(S3RunStore(BUCKET, s3))
    began = time.perf_counter()
    build_series(history, series, site, lambda r: REPORT_URL.format(run_id=r))
    write_index(site, [series])
    took = time.perf_counter() - began
    sent = counted.take()
    return (
        f"| {runs} | {took:.1f} | {took / runs * 1000:.1f} | {sent.get('s3', 0)} | "
        f"{sent.get('dynamodb', 0)} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 10000, 100000])
    parser.add_argument("--old", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--rate", type=int, default=100, help="runs a day (default: 100)")
    parser.add_argument("--publishes", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="small sizes: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.old, args.publishes = [20, 200], [20], 2
    print(
        f"$ python bench/site_publish.py --runs {' '.join(map(str, args.runs))} --old "
        f"{' '.join(map(str, args.old))} --rate {args.rate} --publishes {args.publishes}"
        f"{' --smoke' if args.smoke else ''}"
    )
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        with mock.patch.dict(os.environ, aws_environment(endpoint)):
            print("\nOne run published into the site's files (services/site.py):\n")
            print(
                "| runs of history | chunks | publish, median (ms) | slowest (ms) "
                "| S3 requests | DynamoDB requests | of which Queries "
                "| points in the part written | largest file (MB) | seeding (s) |"
            )
            print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for runs in args.runs:
                print(publish_row(endpoint, runs, args.rate, args.publishes), flush=True)
            if args.old:
                print("\nThe full rebuild the sweeper did before (distkpi_cli/site_pages.py):\n")
                head = "| runs of history | rebuild (s) | ms per run | S3 requests"
                print(head + " | DynamoDB requests |")
                print("| ---: | ---: | ---: | ---: | ---: |")
                for runs in args.old:
                    print(old_row(endpoint, runs, args.rate), flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
