"""`distkpi local`: the whole pipeline on this machine, with real training processes.

moto's server on 127.0.0.1 stands in for AWS, an HTTP server on 127.0.0.1 for GitHub;
the real handlers take a real signed webhook, the jobs they submit run as local
processes of the reference job, S3 notifications reach the collector through SQS, and
failed jobs become Batch Job State Change events for job_events.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from distkpi.domain.judging import Judgement
from distkpi.domain.kpis import RunKpis
from distkpi.local.aws_stack import (
    BUCKET,
    TABLE,
    LocalAws,
    aws_environment,
    create_local_aws,
    function_environment,
)
from distkpi.local.executor import Executor, JobOutcome, LocalJob, job_from_request
from distkpi.local.github_standin import GitHubStandIn
from distkpi.local.handlers import (
    LambdaContext,
    batch_job_event,
    load_handlers,
    project_root,
    pull_request_delivery,
    push_delivery,
    signed_function_url_event,
)

if TYPE_CHECKING:
    from distkpi.adapters.dynamo import RunRepository

SETTLE_TIMEOUT_S = 60
BATCH_STATES = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED")


@dataclass
class RunResult:
    run_id: str
    event: str
    kpis: RunKpis
    target_accuracy: float
    state: str
    description: str
    folder: Path
    report: Path
    judgements: list[Judgement] = field(default_factory=list)


@dataclass
class LocalResult:
    statuses: list[dict[str, Any]]
    runs: list[RunResult]
    jobs: list[JobOutcome]
    events_delivered: int
    seconds: float

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.state in ("success", "failure") for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "statuses": [
                {k: s[k] for k in ("context", "state", "description", "target_url")}
                for s in self.statuses
            ],
            "runs": [r.kpis.to_json() for r in self.runs],
        }


@dataclass
class LocalStack:
    """A running local stack; use `local_stack()` to get one that cleans up after itself."""

    root: Path
    aws: LocalAws
    github: GitHubStandIn
    handlers: dict[str, ModuleType]
    out: Path
    progress: TextIO
    events_delivered: int = 0
    started: float = field(default_factory=time.monotonic)

    def say(self, message: str) -> None:
        print(
            f"[{time.monotonic() - self.started:6.1f}s] {message}", file=self.progress, flush=True
        )

    # -- the three entry points, with real event shapes --------------------------------

    def send_webhook(self, repo: str, sha: str, base_sha: str, *, push: bool = False) -> list[str]:
        """A signed delivery to the real webhook handler: a pull request onto develop at
        ``base_sha``, or a push of ``sha`` to develop on top of it."""
        delivery = str(uuid.uuid4())
        build = push_delivery if push else pull_request_delivery
        headers, body = build(repo, sha, base_sha, delivery)
        event = signed_function_url_event(self.aws.webhook_secret, headers, body)
        response = self.handlers["webhook"].lambda_handler(event, LambdaContext())
        answer = json.loads(response.get("body") or "{}")
        if response["statusCode"] != 201:
            raise RuntimeError(f"webhook answered {response['statusCode']}: {answer}")
        kind = "push to develop" if push else "pull_request"
        self.say(f"webhook: {kind} {sha[:10]} -> runs {', '.join(answer['runs'])}")
        return list(answer["runs"])

    def drain_s3_events(self) -> int:
        """Deliver every queued S3 notification to the collector; how many were delivered."""
        sqs = self.aws.client("sqs")
        delivered = 0
        while True:
            messages = sqs.receive_message(QueueUrl=self.aws.queue_url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not messages:
                return delivered
            for message in messages:
                body = json.loads(message["Body"])
                if body.get("Event") != "s3:TestEvent" and body.get("Records"):
                    self.handlers["collector"].lambda_handler(body, LambdaContext())
                    delivered += 1
                sqs.delete_message(
                    QueueUrl=self.aws.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
            self.events_delivered += delivered

    def job_ended(self, job: LocalJob, outcome: JobOutcome) -> None:
        status = "FAILED" if outcome.failed else "SUCCEEDED"
        reason = outcome.reason or "Essential container in task exited"
        event = batch_job_event(job.job_id, job.name, self.aws.job_queue, status, reason)
        result = self.handlers["job_events"].lambda_handler(event, LambdaContext())
        if outcome.failed or result["settled_config"]:
            self.say(f"job_events: {job.name} {status} ({reason})")

    # -- the jobs ------------------------------------------------------------------------

    def submitted_jobs(self, run_ids: list[str]) -> list[LocalJob]:
        """The Batch jobs of these runs, whatever state moto has moved them to."""
        batch = self.aws.client("batch")
        default = batch.describe_job_definitions(jobDefinitions=[self.aws.single_node_definition])[
            "jobDefinitions"
        ][0]["containerProperties"]["command"]
        job_ids = {
            summary["jobId"]
            for status in BATCH_STATES
            for page in batch.get_paginator("list_jobs").paginate(
                jobQueue=self.aws.job_queue, jobStatus=status
            )
            for summary in page["jobSummaryList"]
        }
        jobs = []
        for job_id in job_ids:
            record = self.records.job(job_id)
            if record is not None and record["run_id"] in run_ids:
                jobs.append(job_from_request(job_id, record["config"], record["request"], default))
        return sorted(jobs, key=lambda j: j.name)

    def run_jobs(self, run_ids: list[str], faults: dict[tuple[str, int], int]) -> list[JobOutcome]:
        executor = Executor(
            self.root / "infra" / "job",
            self.out / "work",
            aws_environment(self.aws.endpoint),
            faults,
        )
        outcomes = []
        jobs = self.submitted_jobs(run_ids)
        for number, job in enumerate(jobs, 1):
            self.say(f"job {number}/{len(jobs)} {job.config}: {job.nodes} node(s) running")
            outcome = executor.run(job, tick=self.drain_s3_events)
            state = f"failed: {outcome.reason}" if outcome.failed else "done"
            self.say(
                f"job {number}/{len(jobs)} {job.config}: {state} in {outcome.seconds:.1f}s; "
                f"events delivered {self.events_delivered}"
            )
            self.drain_s3_events()
            self.job_ended(job, outcome)
            outcomes.append(outcome)
        return outcomes

    # -- results -------------------------------------------------------------------------

    @cached_property
    def records(self) -> RunRepository:
        from distkpi.adapters.dynamo import RunRepository

        return RunRepository(TABLE)

    def run_item(self, run_id: str) -> dict[str, Any]:
        item = self.records.get_run(run_id)
        assert item is not None
        return item

    def wait_settled(self, run_ids: list[str]) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            self.drain_s3_events()
            if all(self.run_item(r).get("status") == "done" for r in run_ids):
                return
            time.sleep(0.5)
        raise RuntimeError(f"runs did not settle within {SETTLE_TIMEOUT_S}s")

    def download(self, prefix: str) -> Path:
        """Copy s3://bucket/<prefix>/ out of the stack (it is gone when the stack stops)."""
        s3 = self.aws.client("s3")
        target = self.out / prefix
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{prefix}/")
        for page in pages:
            for obj in page.get("Contents", []):
                path = target / obj["Key"][len(prefix) + 1 :]
                path.parent.mkdir(parents=True, exist_ok=True)
                s3.download_file(BUCKET, obj["Key"], str(path))
        return target

    def result(self, run_id: str) -> RunResult:
        item = self.run_item(run_id)
        result = item["result"]
        return RunResult(
            run_id,
            str(item["event"]),
            RunKpis.from_json(result["kpis"]),
            float(item["spec"]["target_accuracy"]),
            result["state"],
            result["description"],
            self.download(f"runs/{run_id}"),
            self.download(f"reports/{run_id}") / "index.html",
            [Judgement.from_json(j) for j in result.get("judgements", [])],
        )


@contextmanager
def local_stack(suite: Path, out: Path, progress: TextIO = sys.stderr) -> Iterator[LocalStack]:
    from moto.server import ThreadedMotoServer

    root = project_root()
    saved = dict(os.environ)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    github = GitHubStandIn()
    try:
        host, port = server.get_host_and_port()
        aws = create_local_aws(f"http://{host}:{port}", root / "template.yaml", suite)
        github.token = aws.github_token
        github_url = github.start()
        os.environ.update(function_environment(aws, github_url))
        from distkpi.entry import wiring

        wiring.reset()
        yield LocalStack(root, aws, github, load_handlers(root), out, progress)
    finally:
        github.stop()
        server.stop()
        os.environ.clear()
        os.environ.update(saved)
        from distkpi.entry import wiring

        wiring.reset()


def _sha(seed: str, n: int) -> str:
    return hashlib.sha1(f"{seed}-{n}".encode()).hexdigest()


def run_local(
    suite: Path,
    out: Path,
    sha: str,
    *,
    commits: int = 1,
    repo: str = "local/demo",
    faults: dict[tuple[str, int], int] | None = None,
    progress: TextIO = sys.stderr,
) -> LocalResult:
    """``commits`` merge requests on one stack: commits - 1 pushes to develop build a
    history, then the pull request ``sha`` is judged against it."""
    with local_stack(suite, out, progress) as stack:
        stack.say(
            f"local stack up: AWS (moto) at {stack.aws.endpoint}, GitHub at {stack.github.url}"
        )
        base = _sha(sha, 0)
        run_ids: list[str] = []
        jobs: list[JobOutcome] = []
        for n in range(1, commits):
            pushed = _sha(sha, n)
            run_ids += _run_commit(
                stack, repo, pushed, base, push=True, faults=faults or {}, jobs=jobs
            )
            base = pushed
        run_ids += _run_commit(stack, repo, sha, base, push=False, faults=faults or {}, jobs=jobs)
        runs = [stack.result(r) for r in run_ids]
        stack.say(f"done: {len(jobs)} job(s), {stack.events_delivered} S3 event(s) delivered")
        return LocalResult(
            list(stack.github.statuses),
            runs,
            jobs,
            stack.events_delivered,
            time.monotonic() - stack.started,
        )


def _run_commit(
    stack: LocalStack,
    repo: str,
    sha: str,
    base: str,
    *,
    push: bool,
    faults: dict[tuple[str, int], int],
    jobs: list[JobOutcome],
) -> list[str]:
    run_ids = stack.send_webhook(repo, sha, base, push=push)
    jobs += stack.run_jobs(run_ids, faults if not push else {})
    stack.wait_settled(run_ids)
    for run_id in run_ids:
        result = stack.run_item(run_id)["result"]
        stack.say(f"run {run_id}: {result['state']} - {result['description']}")
    return run_ids
