"""The local stack: moto's server on 127.0.0.1 for AWS, an HTTP server on 127.0.0.1 for
GitHub, and the real handlers, given real event shapes as AWS would give them."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO
from unittest import mock

import boto3

from distkpi.adapters.dynamo import DynamoTable, JobRepository, RunRepository
from distkpi.domain.github.deliveries import SCHEDULE_MESSAGE
from distkpi.domain.layout import SUITES
from distkpi.domain.signing import ManifestKeys
from distkpi.exceptions import DistkpiError
from distkpi.services.schedule import SCHEDULE
from distkpi_cli.local.attach import RunningStack, running
from distkpi_cli.local.aws_stack import (
    BUCKET,
    MANIFEST_SECRET_ID,
    TABLE,
    LocalAws,
    add_chat_webhook,
    create_local_aws,
    function_environment,
)
from distkpi_cli.local.chat_standin import ChatStandIn, RemoteChat
from distkpi_cli.local.github_standin import GitHubApp, GitHubStandIn, RemoteStandIn
from distkpi_cli.local.handlers import (
    LambdaContext,
    batch_job_event,
    function_url_event,
    load_handlers,
    project_root,
    pull_request_delivery,
    push_delivery,
    signed_function_url_event,
)
from distkpi_cli.local.moto_front import GuardedMotoServer
from distkpi_cli.local.queues import drain
from distkpi_cli.local.state import StateError, StateFolder
from distkpi_cli.node.hardening import not_dumpable


class NotStartedError(DistkpiError):
    """The local launcher left a queued delivery, or the schedule, unstarted: its log says
    why (a head GitHub could not tell, a suite that cannot be read)."""


@dataclass
class LocalStack:
    """A running local stack; use `local_stack()` to get one that cleans up after itself."""

    root: Path
    aws: LocalAws
    github: GitHubStandIn | RemoteStandIn
    handlers: dict[str, ModuleType]
    progress: TextIO
    # the chat webhook's stand-in, recording what alerts posted (read over HTTP when attached
    # to `distkpi local up`; None: an up from before it had one)
    chat: ChatStandIn | RemoteChat | None = None
    events_delivered: int = 0
    started: float = field(default_factory=time.monotonic)

    def say(self, message: str) -> None:
        print(
            f"[{time.monotonic() - self.started:6.1f}s] {message}", file=self.progress, flush=True
        )

    @cached_property
    def runs(self) -> RunRepository:
        return RunRepository(DynamoTable(TABLE))

    @cached_property
    def jobs(self) -> JobRepository:
        return JobRepository(DynamoTable(TABLE))

    def deliver(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """A delivery signed with the local webhook secret, to the real webhook handler: its
        status code and JSON answer."""
        return self._webhook(signed_function_url_event(self.aws.webhook_secret, headers, body))

    def receive(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """A delivery as GitHub (the stand-in) signed it, to the real webhook handler."""
        return self._webhook(function_url_event(headers, body))

    def _webhook(self, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The webhook's answer; for a delivery it queued, the launcher's once the queue is
        drained (what it started), as GitHub's one delivery ends in runs."""
        code, answer = self.webhook_only(event)
        if code != 202 or answer.get("message") != "delivery queued":
            return code, answer
        return self._started(answer["delivery"], f"delivery {answer['delivery']}")

    def webhook_only(self, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The webhook handler's own answer (nothing drained)."""
        response = self.handlers["webhook"].lambda_handler(event, LambdaContext())
        return int(response["statusCode"]), json.loads(response.get("body") or "{}")

    def schedule(self) -> tuple[int, dict[str, Any]]:
        """What the stack's schedule does (template.yaml, NightlySchedule): its message on
        the delivery queue, drained; the launcher's answer (the runs it started)."""
        sqs = self.aws.client("sqs")
        sqs.send_message(
            QueueUrl=self.aws.queues.deliveries, MessageBody=json.dumps(SCHEDULE_MESSAGE)
        )
        return self._started(SCHEDULE, "the schedule")

    def _started(self, delivery: str, what: str) -> tuple[int, dict[str, Any]]:
        """The launcher's answer to ``delivery``, once the queue is drained."""
        for started in self.drain_deliveries():
            if started["delivery"] == delivery:
                return int(started["status"]), dict(started["answer"])
        raise NotStartedError(f"{what} was queued but not started (see the launcher's log)")

    def drain_deliveries(self, context: LambdaContext | None = None) -> list[dict[str, Any]]:
        """Every queued delivery to the launcher, five to an invocation as the template's
        event source gives them; each started delivery's answer."""
        launcher = self.handlers["launcher"]
        drained = drain(
            self.aws.client("sqs"),
            self.aws.queues.deliveries,
            lambda event: launcher.lambda_handler(event, context or LambdaContext()),
            batch_size=5,
            answers_key="deliveries",
        )
        return drained.answers

    def sweep(self) -> dict[str, int]:
        """The sweeper's schedule, then the overdue runs it handed over, each settled."""
        swept = self.handlers["sweeper"].lambda_handler({"source": "aws.events"}, LambdaContext())
        deadlines = self.handlers["deadlines"]
        drain(
            self.aws.client("sqs"),
            self.aws.queues.overdue_runs,
            lambda event: deadlines.lambda_handler(event, LambdaContext()),
            batch_size=1,
        )
        return dict(swept)

    def send_webhook(self, repo: str, sha: str, base_sha: str, *, push: bool = False) -> list[str]:
        """A signed delivery to the real webhook handler: a pull request onto develop at
        ``base_sha``, or a push of ``sha`` to develop on top of it."""
        delivery = str(uuid.uuid4())
        build = push_delivery if push else pull_request_delivery
        code, answer = self.deliver(*build(repo, sha, base_sha, delivery))
        if code != 201:
            raise RuntimeError(f"webhook answered {code}: {answer}")
        kind = "push to develop" if push else "pull_request"
        self.say(f"webhook: {kind} {sha[:10]} -> runs {', '.join(answer['runs'])}")
        return list(answer["runs"])

    def drain_s3_events(self) -> int:
        """Deliver every queued S3 event (the collector's rule took) to the collector; how many
        were delivered."""
        sqs = self.aws.client("sqs")
        delivered = 0
        while True:
            messages = sqs.receive_message(QueueUrl=self.aws.queue_url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not messages:
                self.events_delivered += delivered
                return delivered
            for message in messages:
                body = json.loads(message["Body"])
                if body.get("detail-type") == "Object Created":
                    self.handlers["collector"].lambda_handler(body, LambdaContext())
                    delivered += 1
                sqs.delete_message(
                    QueueUrl=self.aws.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )

    def job_ended(self, job_id: str, name: str, failed: bool, reason: str | None) -> None:
        """A Batch Job State Change event, as EventBridge sends it, to job_events."""
        status = "FAILED" if failed else "SUCCEEDED"
        reason = reason or "Essential container in task exited"
        event = batch_job_event(job_id, name, self.aws.job_queue, status, reason)
        result = self.handlers["job_events"].lambda_handler(event, LambdaContext())
        if failed or result["settled_config"]:
            self.say(f"job_events: {name} {status} ({reason})")

    @cached_property
    def manifest_keys(self) -> ManifestKeys:
        """Each config's key, derived from the stack's master secret as the launcher does."""
        sm = self.aws.client("secretsmanager")
        return ManifestKeys(
            lambda: str(sm.get_secret_value(SecretId=MANIFEST_SECRET_ID)["SecretString"])
        )

    def worker_environment(self) -> dict[str, str]:
        """What a job's processes need to reach this stack's AWS."""
        return self.aws.environment()


@contextmanager
def local_stack(
    suite: Path,
    progress: TextIO = sys.stderr,
    *,
    github_app: bool = False,
    state: StateFolder | None = None,
    fresh: bool = False,
    port: int = 0,
    save: bool = True,
    repository: Path | None = None,
) -> Iterator[LocalStack]:
    """Up on free ports (or moto on ``port`` and GitHub on the next), with ``suite``
    deployed; down (and the environment as it was) afterwards. ``github_app``: GitHub is an
    App's host. ``repository``: the git repository GitHub serves (this checkout by
    default): compares and commits are answered from it. ``state``: start from that
    folder's state (``fresh``: from none) and leave it updated (unless not ``save``),
    holding it for as long as the stack is up."""
    up = running(state) if state is not None else None
    if up is not None:  # `distkpi local up` holds the state: run on its stack
        if fresh:
            raise StateError(f"--fresh: {state} is held by `distkpi local up` (pid {up.pid})")
        with _attached(up, suite, progress) as stack:
            stack.say(f"on the stack `distkpi local up` keeps (pid {up.pid})")
            yield stack
        return
    with ExitStack() as held:
        if state is not None:
            held.enter_context(state.locked())
            if fresh:
                state.fresh()
            state.check()
        served = repository or project_root()
        stack = held.enter_context(
            _local_stack(suite, progress, github_app, state, port, repository=served)
        )
        yield stack
        if state is not None and save:
            items, objects = state.save(stack.aws.client, TABLE, BUCKET)
            stack.say(f"state saved to {state.path}: {items} item(s), {objects} object(s)")


@contextmanager
def _attached(up: RunningStack, suite: Path, progress: TextIO) -> Iterator[LocalStack]:
    root = project_root()
    aws = LocalAws(**up.aws)
    with mock.patch.dict(os.environ):
        os.environ.update(aws.environment())
        os.environ.pop("AWS_SESSION_TOKEN", None)
        boto3.DEFAULT_SESSION = None
        aws.client("s3").put_object(
            Bucket=BUCKET, Key=f"{SUITES}{suite.name}", Body=suite.read_bytes()
        )
        os.environ.update(function_environment(aws, up.github, chat=bool(up.chat)))
        from distkpi.entry import wiring

        wiring.reset()
        chat = RemoteChat(up.chat) if up.chat else None
        yield LocalStack(root, aws, RemoteStandIn(up.github), load_handlers(root), progress, chat)
        wiring.reset()


@contextmanager
def _local_stack(
    suite: Path,
    progress: TextIO,
    github_app: bool,
    state: StateFolder | None,
    port: int,
    *,
    repository: Path,
) -> Iterator[LocalStack]:
    root = project_root()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    if os.geteuid() != 0:  # the code runs as this user: it must not read this process
        not_dumpable()  # (its environment and memory hold the stack's key)
    server = GuardedMotoServer("127.0.0.1", port)
    server.start()
    app = GitHubApp() if github_app else None
    github = GitHubStandIn(app=app, port=port + 1 if port else 0, repository=repository)
    chat = ChatStandIn(port=port + 2 if port else 0)
    loaded: list[tuple[int, int]] = []

    def restore(client: Callable[[str], Any]) -> None:
        if state is not None:
            loaded.append(state.load(client, TABLE, BUCKET))

    try:
        # everything set in the environment from here on is undone on the way out
        with mock.patch.dict(os.environ):
            host, port = server.get_host_and_port()
            aws = create_local_aws(
                f"http://{host}:{port}",
                root / "template.yaml",
                suite,
                github_app=app.secret() if app else None,
                restore=restore,
                lock=functools.partial(server.lock, server.url),
            )
            github.token = aws.github_token
            add_chat_webhook(aws, chat.start())
            os.environ.update(function_environment(aws, github.start(), chat=True))
            # the handlers' logger takes its level from this environment when first imported
            from distkpi.entry import wiring

            wiring.reset()
            stack = LocalStack(root, aws, github, load_handlers(root), progress, chat)
            github.webhook, github.webhook_secret = stack.receive, aws.webhook_secret
            if state is not None and loaded:
                items, objects = loaded[0]
                stack.say(f"state from {state.path}: {items} item(s), {objects} object(s)")
            yield stack
            wiring.reset()
    finally:
        github.stop()
        chat.stop()
        server.stop()
        boto3.DEFAULT_SESSION = None  # it keeps the stack's credentials it found
