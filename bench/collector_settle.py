"""What settling a big config costs the collector, against downloading its logs with boto3.

    python bench/collector_settle.py [--gb 0.5 2] [--older-image] [--smoke]

The resnet50 suite's 4x8-8ps config (12 nodes: 4 trainers, 8 parameter servers) on moto's
server (its own process, on 127.0.0.1) with the stack made from template.yaml; the real
webhook and launcher start the run and the real collector handler settles it. Each node's
files are a dense log (every tenth line an :::MLLOG record, the rest glog; --gb in all over the 12
nodes) and a GPU sample file, described as `distkpi node` describes them
(`node/summaries.describe`: the sha256 and, with this engine, the KPI engine's summary),
uploaded, and named in a manifest signed with the config's key. The collector gets the
S3 events of nodes 0 to 10 first; the time is that of the 12th, the one that settles the
config. Beside it, in the same run: the 12 logs downloaded with boto3 (`get_object` and
read), and the node's own time to describe its files (nodes do it in parallel, once).
`--older-image` writes manifests without summaries, as an image older than the engine's
summaries does, so the collector parses every log from S3. `--smoke`: 1 MB of logs, to see
that it runs (seconds).

Run it with another checkout's package first on PYTHONPATH to measure that code: one whose
collector takes S3's events through EventBridge, as this tree's does (the event it is given).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import boto3
from _local_stack import moto_server

from distkpi.domain.signing import ManifestKeys, sign
from distkpi_cli.local.aws_stack import (
    BUCKET,
    MANIFEST_SECRET_ID,
    create_local_aws,
    function_environment,
)
from distkpi_cli.local.github_standin import GitHubStandIn
from distkpi_cli.local.handlers import (
    LambdaContext,
    load_handlers,
    project_root,
    push_delivery,
    signed_function_url_event,
)
from distkpi_cli.local.queues import drain
from distkpi_cli.node.summaries import describe

CONFIG, NODES, TRAINERS = "4x8-8ps", 12, 4
STEP = (
    ':::MLLOG {"key": "tracked_stats", "value": {"throughput": 1234.5}, "time_ms": 1}\n'
    + "I1130 12:00:00.000001 1200 executor.cc:100] Run op conv2d_grad on CUDAPlace(0) "
    "inputs X[64, 512, 7, 7] took 0.123456 ms\n" * 9
)
GPU = "timestamp, index, memory.used [MiB]\n" + "2026/11/30 00:00:00.000, 0, 12000 MiB\n" * 1000


def engine_version() -> int | None:
    try:
        from distkpi.domain.logs.engineversion import engine_version as derived
    except ImportError:  # code whose version was written by hand, or from before summaries
        try:
            from distkpi.domain.logs.filesummary import ENGINE_VERSION
        except ImportError:
            return None
        return int(ENGINE_VERSION)
    return derived()


def node_files(work: Path, per_node_bytes: int) -> tuple[Path, Path]:
    log, gpu = work / "node.log", work / "node.gpu.csv"
    with log.open("w") as out:
        while out.tell() < per_node_bytes:
            out.write(STEP * 1000)
    gpu.write_text(GPU)
    return log, gpu


def upload_nodes(
    s3: Any, run_id: str, key: str, log: Path, gpu: Path, *, summaries: bool
) -> tuple[list[str], float]:
    """Each node's files, then its signed manifest; the slowest node's time to describe
    its files, as `distkpi node` does before its manifest."""
    prefix = f"runs/{run_id}/{CONFIG}/"
    keys, slowest = [], 0.0
    version = engine_version() if summaries else None
    for node in range(NODES):
        role = "trainer" if node < TRAINERS else "pserver"
        rank = node if role == "trainer" else node - TRAINERS
        files = ((log, f"logs/{role}-{rank}.log", "log"),)
        files += ((gpu, f"logs/{role}-{rank}.gpu.csv", "gpu_memory"),)
        entries, described = [], 0.0
        for local, path, kind in files:
            data = local.read_bytes()
            started = time.perf_counter()
            entry = {"path": path, "role": role, "rank": rank, "kind": kind}
            entries.append(entry | describe(io.BytesIO(data), kind))  # type: ignore[arg-type]
            described += time.perf_counter() - started
            if not summaries:
                entries[-1].pop("summary", None)
            s3.upload_file(str(local), BUCKET, prefix + path)
        slowest = max(slowest, described)
        manifest: dict[str, Any] = {
            "schema": 1,
            "run_id": run_id,
            "config": CONFIG,
            "node": node,
            "exit_code": 0,
            "started_at": "2026-11-30T03:00:00Z",
            "finished_at": "2026-11-30T03:10:00Z",
            "files": entries,
        }
        if version is not None:
            manifest["engine_version"] = version
        keys.append(f"{prefix}node-{node}.json")
        s3.put_object(Bucket=BUCKET, Key=keys[-1], Body=json.dumps(sign(key, manifest)))
    return keys, slowest


def s3_event(key: str) -> dict[str, Any]:
    created = json.loads(
        (project_root() / "tests" / "events" / "s3_object_created_eventbridge.json").read_text()
    )
    created["detail"]["bucket"]["name"] = BUCKET
    created["detail"]["object"]["key"] = key
    return created  # type: ignore[no-any-return]


def download(s3: Any, run_id: str) -> float:
    started = time.perf_counter()
    for node in range(NODES):
        role = "trainer" if node < TRAINERS else "pserver"
        rank = node if role == "trainer" else node - TRAINERS
        key = f"runs/{run_id}/{CONFIG}/logs/{role}-{rank}.log"
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
        while body.read(1 << 22):
            pass
    return time.perf_counter() - started


def measure(gb: float, summaries: bool, work: Path, endpoint: str, n: int) -> None:
    root = project_root()
    log, gpu = node_files(work, int(gb * 1e9 / NODES))
    github = GitHubStandIn()
    aws = create_local_aws(endpoint, root / "template.yaml", root / "infra/suites/resnet50.yaml")
    github.token = aws.github_token
    os.environ.update(function_environment(aws, github.start()))
    os.environ.update({"POWERTOOLS_LOG_LEVEL": "ERROR", "REPORT_BASE_URL": "https://x.example"})
    try:
        from distkpi.entry import wiring

        wiring.reset()
        handlers = load_handlers(root)
        headers, body = push_delivery("PaddlePaddle/Paddle", f"{n:040x}", "0" * 40, f"bench-{n}")
        event = signed_function_url_event(aws.webhook_secret, headers, body)
        handlers["webhook"].lambda_handler(event, LambdaContext())  # queued for the launcher
        (started,) = drain(
            aws.client("sqs"),
            aws.queues.deliveries,
            lambda e: handlers["launcher"].lambda_handler(e, LambdaContext()),
            answers_key="deliveries",
        ).answers
        (run_id,) = started["answer"]["runs"]
        table = boto3.resource("dynamodb", endpoint_url=endpoint).Table("distkpi-local")
        # each config's key is derived from the stack's master secret, as the launcher's
        master = aws.client("secretsmanager").get_secret_value(SecretId=MANIFEST_SECRET_ID)
        key = ManifestKeys(lambda: str(master["SecretString"])).for_config(run_id, CONFIG)
        s3 = aws.client("s3")
        keys, node_s = upload_nodes(s3, run_id, key, log, gpu, summaries=summaries)
        for key in keys[:-1]:
            handlers["collector"].lambda_handler(s3_event(key), LambdaContext())
        started = time.perf_counter()
        handlers["collector"].lambda_handler(s3_event(keys[-1]), LambdaContext())
        settle_s = time.perf_counter() - started
        settled = table.get_item(Key={"PK": f"RUN#{run_id}", "SK": f"CONFIG#{CONFIG}"})["Item"]
        kpis = settled["kpis"]
        if os.environ.get("BENCH_SHOW_PROBLEMS"):
            print(kpis["problems"])
        if kpis["throughput"] is None:
            raise SystemExit(f"the config was not read: {kpis['problems']}")
        download_s = download(s3, run_id)
        print(
            f"| {NODES * log.stat().st_size / 1e9:.2f} GB | "
            f"{'yes' if summaries and engine_version() is not None else 'no'} | "
            f"{settle_s:.2f} s | {download_s:.2f} s | {settle_s / download_s:.2f}x | "
            f"{node_s:.2f} s | {len(kpis['problems'])} |"
        )
    finally:
        github.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--older-image", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="1 MB of logs: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.gb = [0.001]
    import distkpi

    flags = (" --older-image" if args.older_image else "") + (" --smoke" if args.smoke else "")
    print(
        f"command: python bench/collector_settle.py --gb {' '.join(map(str, args.gb))}"
        f"{flags}  (distkpi from {distkpi.__file__})"
    )
    print(
        "| logs of the config | summaries | collector settles | boto3 download | ratio | "
        "node describes its files | problems |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    server, endpoint = moto_server()
    try:
        for n, gb in enumerate(args.gb, start=1):
            with tempfile.TemporaryDirectory() as tmp:
                measure(gb, not args.older_image, Path(tmp), endpoint, n)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
