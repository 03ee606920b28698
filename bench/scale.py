"""A burst of GitHub deliveries on the local stack: lost deliveries, the webhook's answer time,
Batch's SubmitJob rate, GitHub requests and collector invocations per run.

    python bench/scale.py --deliveries 50 [--baseline] [--complete 5] [--app] [--json] [--smoke]

AWS is moto's server (its own process, on 127.0.0.1) with the stack made from template.yaml
(the table, the bucket, the delivery queue with its dead-letter queue, the collector's
EventBridge rule and the queue behind it), GitHub the stand-in (127.0.0.1), the suite the
seed's matrix (infra/suites/resnet50.yaml: 1x1, 1x8, 2x8 + 4 pservers, 4x8 + 8 pservers, 4
jobs a run).
N pushes of distinct commits are delivered at once, signed, to the real webhook handler run
by 10 processes (the template's WebhookConcurrency), each delivery's answer timed (a
process's first answer includes its container's cold start: `webhook_ms_warm` leaves those
out); then 4 launcher processes (the launcher's reserved concurrency) drain the delivery
queue into the real launcher handler, five messages an invocation, at the template's
SUBMIT_JOBS_PER_S. (In AWS the two run at once, each invocation on its own CPU; on a
machine of two cores they would time each other's work.) `--baseline` is this branch's code
run as the main branch ran it: the webhook process starts the delivery's runs inside the
answer (the launcher handler called on the delivery right after the webhook's own work,
timed together), with no pacing and no retry on throttling.

What stands in for what: Batch is moto's (it runs no job); Batch's account limit of 50
SubmitJob a second is applied afterwards to the jobs' creation times (`createdAt`): a job
over 50 in any second would have been refused (`TooManyRequestsException`), which on the
main branch fails its config, so its delivery counts as lost; so does a delivery answered
after GitHub's 10 s (GitHub does not redeliver). Training is a job stand-in: for each job of
the first `--complete` runs it writes what a finished node writes to S3 (each multi-node
node's rendezvous record, its log with throughput lines and its signed manifest, last), then
Batch's Job State Change events (RUNNING, SUCCEEDED) go to the real job_events handler and
the S3 events the collector's rule takes (through EventBridge and SQS, as the local stack
takes them) to the real collector.
GitHub requests per run: those the stand-in served during the launch, over the runs started,
plus those during the completion, over the runs completed; content-creating ones (POST,
PATCH, PUT, DELETE, other than an installation token) apart. Collector invocations per run
likewise, and how many acted on a manifest (`handled` > 0). `submit_jobs_span_s`: the
seconds from the burst's first job submitted to its last (Batch's `createdAt`). `--smoke`:
4 deliveries, 1 run completed, 2 webhook and 2 launcher processes, to see that it runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _local_stack import moto_server

ROOT = Path(__file__).resolve().parents[1]
REPO = "PaddlePaddle/Paddle"
SUITE = ROOT / "infra" / "suites" / "resnet50.yaml"
GITHUB_WINDOW_S = 10.0  # GitHub stops waiting for a webhook's answer
BATCH_SUBMITS_PER_S = 50  # Batch's SubmitJob quota for the account, not raisable
WEBHOOK_PROCESSES = 10  # template.yaml's WebhookConcurrency default
LAUNCHER_PROCESSES = 4  # template.yaml's LauncherFunction ReservedConcurrentExecutions
LAUNCHER_RATE = "10"  # template.yaml's LauncherFunction SUBMIT_JOBS_PER_S
LOG = "".join(
    f"I1130 12:00:{i:02d}.000000 1 trainer.py:10] Pass {i}, Batch 0, Cost 0.5, samples/s: 1234.5\n"
    for i in range(10)
)


# --- the worker processes: a webhook's or a launcher's container -------------------------


def webhook_worker(job: dict[str, Any]) -> None:
    """Each delivery given to the real webhook handler, timed; with ``baseline``, the real
    launcher handler on it right after, in the same timing (as the main branch's webhook)."""
    from distkpi.domain.github.deliveries import QueuedDelivery
    from distkpi.domain.layout import delivery_key
    from distkpi_cli.local.handlers import (
        LambdaContext,
        load_handlers,
        push_delivery,
        signed_function_url_event,
    )
    from distkpi_cli.local.queues import sqs_event

    handlers = load_handlers(ROOT)
    for sha, delivery in job["deliveries"]:
        headers, body = push_delivery(REPO, sha, "0" * 40, delivery)
        event = signed_function_url_event(job["secret"], headers, body)
        started = time.perf_counter()
        response = handlers["webhook"].lambda_handler(event, LambdaContext())
        status, answer = response["statusCode"], json.loads(response.get("body") or "{}")
        if job["baseline"] and status == 202:
            queued = QueuedDelivery.of(delivery, "push", body, delivery_key(delivery))
            message = queued.to_json()
            record = {"MessageId": delivery, "ReceiptHandle": "-", "Body": json.dumps(message)}
            result = handlers["launcher"].lambda_handler(
                sqs_event([record], "arn:aws:sqs:us-east-1:123456789012:inline"),
                LambdaContext(),
            )
            started_runs = result.get("deliveries") or [{"status": 500, "answer": {}}]
            status, answer = started_runs[0]["status"], started_runs[0]["answer"]
        ms = (time.perf_counter() - started) * 1000
        first = delivery == job["deliveries"][0][1]  # this container's cold start
        print(
            json.dumps(
                {"delivery": delivery, "ms": ms, "status": status, "answer": answer, "cold": first}
            )
        )


def launcher_worker(job: dict[str, Any]) -> None:
    """The delivery queue drained into the real launcher handler until the webhooks are done
    and the queue stays empty."""
    import boto3

    from distkpi_cli.local.handlers import LambdaContext, load_handlers
    from distkpi_cli.local.queues import drain

    handlers = load_handlers(ROOT)
    sqs = boto3.client("sqs", endpoint_url=job["endpoint"], region_name="us-east-1")
    done_marker = Path(job["done"])
    while True:
        drained = drain(
            sqs,
            job["queue"],
            lambda event: handlers["launcher"].lambda_handler(event, LambdaContext()),
            batch_size=5,
            answers_key="deliveries",
        )
        for answer in drained.answers:
            print(json.dumps(answer))
        if not drained.records and done_marker.exists():
            return
        time.sleep(0.05)


def run_workers(mode: str, jobs: list[dict[str, Any]], env: dict[str, str]) -> list[Any]:
    """One process per job, all at once; each line a worker prints, parsed."""
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for _ in jobs
    ]
    for proc, job in zip(procs, jobs, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(job))
        proc.stdin.close()
    lines: list[Any] = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        if proc.wait() != 0:
            raise SystemExit(f"a {mode} worker failed:\n{err[-3000:]}")
        lines += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return lines


# --- the parent: the stack, the burst, the figures ---------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def submits(batch: Any, queue: str) -> list[dict[str, Any]]:
    from distkpi_cli.local.dispatch import BATCH_STATES

    jobs: list[dict[str, Any]] = []
    for status in BATCH_STATES:
        for page in batch.get_paginator("list_jobs").paginate(jobQueue=queue, jobStatus=status):
            jobs += page["jobSummaryList"]
    return list({j["jobId"]: j for j in jobs}.values())


def over_quota(jobs: list[dict[str, Any]]) -> tuple[int, set[str]]:
    """The peak SubmitJob calls in any one second, and the jobs past Batch's 50 in theirs
    (Batch would have refused them)."""
    ordered = sorted(jobs, key=lambda j: j["createdAt"])
    peak, refused, start = 0, set(), 0
    for end, job in enumerate(ordered):
        while job["createdAt"] - ordered[start]["createdAt"] >= 1000:
            start += 1
        in_window = end - start + 1
        peak = max(peak, in_window)
        if in_window > BATCH_SUBMITS_PER_S:
            refused.add(job["jobName"])
    return peak, refused


def submit_span_s(jobs: list[dict[str, Any]]) -> float:
    """Seconds from the first job submitted to the last."""
    created = [j["createdAt"] for j in jobs]
    return round((max(created) - min(created)) / 1000, 1) if created else 0.0


def kinds(requested: list[str]) -> dict[str, int]:
    content = [
        r
        for r in requested
        if r.split(" ", 1)[0] in {"POST", "PATCH", "PUT", "DELETE"} and "access_tokens" not in r
    ]
    return {"content": len(content), "other": len(requested) - len(content)}


class Stack:
    """The local stack for the bench: moto's server, the stand-in, the real handlers."""

    def __init__(self, endpoint: str, app: bool) -> None:
        from distkpi_cli.local.aws_stack import create_local_aws, function_environment
        from distkpi_cli.local.github_standin import GitHubApp, GitHubStandIn
        from distkpi_cli.local.handlers import load_handlers

        github_app = GitHubApp() if app else None
        self.github = GitHubStandIn(app=github_app)
        self.aws = create_local_aws(
            endpoint,
            ROOT / "template.yaml",
            SUITE,
            github_app=github_app.secret() if github_app else None,
        )
        self.github.token = self.aws.github_token
        self.env = {
            **os.environ,
            **function_environment(self.aws, self.github.start()),
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "REPORT_BASE_URL": "https://distkpi.example.com",
        }
        os.environ.update(self.env)
        from distkpi.entry import wiring

        wiring.reset()
        self.handlers = load_handlers(ROOT)

    def stop(self) -> None:
        self.github.stop()

    def notifications(self) -> tuple[int, int]:
        """The S3 notifications queued so far, each to the real collector: how many
        invocations, and how many acted on a manifest."""
        from distkpi_cli.local.queues import drain

        acted = 0

        def collect(event: dict[str, Any]) -> dict[str, Any]:
            nonlocal acted
            for record in event["Records"]:
                body = json.loads(record["body"])
                if body.get("detail-type") != "Object Created":
                    continue
                from distkpi_cli.local.handlers import LambdaContext

                handled = self.handlers["collector"].lambda_handler(body, LambdaContext())
                acted += 1 if handled.get("handled") else 0
            return {}

        drained = drain(self.aws.client("sqs"), self.aws.queue_url, collect, batch_size=1)
        return drained.records, acted

    def complete(self, run_id: str) -> None:
        """The job stand-in: each job of the run runs, its nodes write what finished nodes
        write, and Batch's events follow."""
        from distkpi.adapters.dynamo import DynamoTable, JobRepository, RunRepository
        from distkpi.domain.signing import ManifestKeys, sign
        from distkpi_cli.local.aws_stack import BUCKET, MANIFEST_SECRET_ID, TABLE
        from distkpi_cli.local.handlers import LambdaContext, batch_job_event
        from distkpi_cli.node.rendezvous import FOLDER, record_name

        s3, sm = self.aws.client("s3"), self.aws.client("secretsmanager")
        master = str(sm.get_secret_value(SecretId=MANIFEST_SECRET_ID)["SecretString"])
        keys = ManifestKeys(lambda: master)
        runs, jobs = RunRepository(DynamoTable(TABLE)), JobRepository(DynamoTable(TABLE))
        spec = json.loads(
            s3.get_object(Bucket=BUCKET, Key=f"runs/{run_id}/run.json")["Body"].read()
        )
        for config in runs.configs(run_id):
            if config.job_id is None:
                continue
            job = jobs.get(config.job_id)
            assert job is not None
            name = job.request["jobName"]
            event = batch_job_event(config.job_id, name, self.aws.job_queue, "RUNNING", "")
            self.handlers["job_events"].lambda_handler(event, LambdaContext())
            layout = next(c for c in spec["configs"] if c["name"] == config.name)
            key = keys.for_config(run_id, config.name)
            prefix = f"runs/{run_id}/{config.name}/"
            for node in range(config.nodes_expected):
                trainer = node < layout["trainers"]
                role, rank = (
                    ("trainer", node) if trainer else ("pserver", node - layout["trainers"])
                )
                if config.nodes_expected > 1:
                    where = {"node": node, "address": "127.0.0.1", "port": 6000 + node}
                    s3.put_object(
                        Bucket=BUCKET,
                        Key=f"{prefix}{FOLDER}{record_name(node)}",
                        Body=json.dumps(where),
                    )
                log = f"logs/{role}-{rank}.log"
                body = LOG.encode() if trainer else b"pserver up\n"
                s3.put_object(Bucket=BUCKET, Key=prefix + log, Body=body)

                manifest = {
                    "schema": 1,
                    "run_id": run_id,
                    "config": config.name,
                    "node": node,
                    "exit_code": 0,
                    "started_at": "2026-12-02T03:00:00Z",
                    "finished_at": "2026-12-02T03:10:00Z",
                    "files": [
                        {
                            "path": log,
                            "role": role,
                            "rank": rank,
                            "kind": "log",
                            "sha256": hashlib.sha256(body).hexdigest(),
                        }
                    ],
                }
                s3.put_object(
                    Bucket=BUCKET,
                    Key=f"{prefix}node-{node}.json",
                    Body=json.dumps(sign(key, manifest)),
                )
            event = batch_job_event(config.job_id, name, self.aws.job_queue, "SUCCEEDED", "")
            self.handlers["job_events"].lambda_handler(event, LambdaContext())


def measure(n: int, baseline: bool, complete: int, app: bool, smoke: bool) -> dict[str, Any]:
    server, endpoint = moto_server()
    stack = Stack(endpoint, app)
    try:
        return burst(stack, n, baseline, complete, smoke)
    finally:
        stack.stop()
        server.terminate()
        server.wait()


def burst(stack: Stack, n: int, baseline: bool, complete: int, smoke: bool) -> dict[str, Any]:
    env = dict(stack.env)
    if baseline:  # the main branch: no pacing, a throttled submit fails its config
        env |= {"SUBMIT_JOBS_PER_S": "100000", "SUBMIT_THROTTLE_RETRIES": "0"}
    else:
        env |= {"SUBMIT_JOBS_PER_S": LAUNCHER_RATE}
    deliveries = [(f"{i + 1:040x}", f"scale-{i:05d}") for i in range(n)]
    webhooks = 2 if smoke else WEBHOOK_PROCESSES
    launchers = 2 if smoke else LAUNCHER_PROCESSES
    shares = [deliveries[i::webhooks] for i in range(webhooks)]
    github_before = len(stack.github.requested)
    with tempfile.TemporaryDirectory() as tmp:
        done = Path(tmp) / "webhooks-done"
        common = {"secret": stack.aws.webhook_secret, "baseline": baseline}
        webhook_jobs = [{**common, "deliveries": share} for share in shares if share]
        launcher_jobs = [
            {
                "endpoint": stack.aws.endpoint,
                "queue": stack.aws.queues.deliveries,
                "done": str(done),
            }
            for _ in range(0 if baseline else launchers)
        ]
        # the webhooks first, then the launchers: in AWS each invocation has its own CPU,
        # here they would share two cores and time each other's work
        answered = run_workers("webhook", webhook_jobs, env)
        done.touch()
        started = answered if baseline else run_workers("launcher", launcher_jobs, env)
    launch_requests = stack.github.requested[github_before:]
    batch = stack.aws.client("batch")
    jobs = submits(batch, stack.aws.job_queue)
    peak, refused = over_quota(jobs)
    runs_of = {
        s["delivery"]: list(s["answer"].get("runs") or []) for s in started if s["status"] == 201
    }
    refused_runs = {name.split("-")[1] for name in refused}  # distkpi-<run>-<config>
    lost = [
        d
        for _, d in deliveries
        if not runs_of.get(d) or any(r.split("-")[0] in refused_runs for r in runs_of.get(d, []))
    ]
    late = [a for a in answered if a["ms"] > GITHUB_WINDOW_S * 1000]
    lost = sorted(set(lost) | {a["delivery"] for a in late})
    dead = stack.aws.client("sqs").get_queue_attributes(
        QueueUrl=stack.aws.queues.dead_deliveries, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]
    launched_runs = sum(len(r) for r in runs_of.values())
    launch_invocations, launch_acted = stack.notifications()
    # the completion: the job stand-in finishes the first runs
    finished = [r for rs in runs_of.values() for r in rs][:complete]
    github_mid = len(stack.github.requested)
    invocations, acted = 0, 0
    for run_id in finished:
        stack.complete(run_id)
        more, did = stack.notifications()
        invocations, acted = invocations + more, acted + did
    done_requests = stack.github.requested[github_mid:]
    per_launch, per_done = kinds(launch_requests), kinds(done_requests)
    ms = [a["ms"] for a in answered]
    warm = [a["ms"] for a in answered if not a["cold"]]
    per_run = {
        kind: round(
            per_launch[kind] / max(launched_runs, 1) + per_done[kind] / max(len(finished), 1), 2
        )
        for kind in ("content", "other")
    }
    return {
        "deliveries": n,
        "lost": len(lost),
        "webhook_ms": {"p50": round(percentile(ms, 0.5), 1), "p99": round(percentile(ms, 0.99), 1)},
        "github_per_run": per_run,
        "collector_per_run": {
            "invocations": round(
                launch_invocations / max(launched_runs, 1) + invocations / max(len(finished), 1),
                2,
            ),
            "acted": round(launch_acted / max(launched_runs, 1) + acted / max(len(finished), 1), 2),
        },
        "mode": "baseline" if baseline else "queue",
        "runs_started": launched_runs,
        "runs_completed": len(finished),
        "submit_jobs": len(jobs),
        "submit_jobs_peak_per_s": peak,
        "submit_jobs_over_quota": len(refused),
        # from the burst's first job submitted to its last (Batch's createdAt)
        "submit_jobs_span_s": submit_span_s(jobs),
        "answered_after_10s": len(late),
        "dead_letters": int(dead),
        "webhook_ms_mean": round(statistics.fmean(ms), 1) if ms else 0.0,
        # each webhook process's first answer is its container's cold start
        "webhook_ms_warm": {
            "p50": round(percentile(warm, 0.5), 1),
            "p99": round(percentile(warm, 0.99), 1),
        },
    }


def table(results: list[dict[str, Any]]) -> Iterator[str]:
    yield (
        "| mode | deliveries | lost | webhook p50 | webhook p99 | SubmitJob peak/s | "
        "over 50/s | jobs submitted within | GitHub content/run | GitHub other/run | "
        "collector invocations/run | acted/run |"
    )
    yield "| --- " * 12 + "|"
    for r in results:
        yield (
            f"| {r['mode']} | {r['deliveries']} | {r['lost']} | {r['webhook_ms']['p50']} ms | "
            f"{r['webhook_ms']['p99']} ms | {r['submit_jobs_peak_per_s']} | "
            f"{r['submit_jobs_over_quota']} | {r['submit_jobs_span_s']} s | "
            f"{r['github_per_run']['content']} | "
            f"{r['github_per_run']['other']} | {r['collector_per_run']['invocations']} | "
            f"{r['collector_per_run']['acted']} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=50)
    parser.add_argument("--baseline", action="store_true", help="the main branch's webhook")
    parser.add_argument("--complete", type=int, default=5, help="runs the job stand-in ends")
    parser.add_argument("--app", action="store_true", help="GitHub as an App (check runs)")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    parser.add_argument("--smoke", action="store_true", help="4 deliveries: that it runs")
    parser.add_argument("--worker", choices=("webhook", "launcher"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        job = json.loads(sys.stdin.read())
        (webhook_worker if args.worker == "webhook" else launcher_worker)(job)
        return
    if args.smoke:
        args.deliveries, args.complete = 4, 1
    flags = "".join(
        f" --{name}" for name in ("baseline", "app", "json", "smoke") if getattr(args, name)
    )
    command = (
        f"python bench/scale.py --deliveries {args.deliveries} --complete {args.complete}{flags}"
    )
    result = measure(args.deliveries, args.baseline, args.complete, args.app, args.smoke)
    if args.json:
        print(json.dumps(result))
        print(f"command: {command}", file=sys.stderr)
        if args.smoke:  # the smoke test reads the command from stdout
            print(f"command: {command}")
        return
    print(f"command: {command}")
    for line in table([result]):
        print(line)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
