"""AWS (moto, in-process) built from template.yaml, a GitHub stand-in on 127.0.0.1, and the
three Lambda handlers called with real event shapes."""

from __future__ import annotations

import base64
import copy
import functools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.authorization import enable_iam_authentication

from distkpi.domain.github.webhook import sign
from distkpi.entry import wiring
from distkpi_cli.local.aws_stack import (
    ACCOUNT,
    BUCKET,
    GITHUB_APP_SECRET_ID,
    GITHUB_TOKEN_SECRET_ID,
    MANIFEST_SECRET_ID,
    REGION,
    STACK_NAME,
    TABLE,
    WEBHOOK_SECRET_ID,
    Provisioned,
    WorkQueues,
    function_environment,
    provision,
)
from distkpi_cli.local.dispatch import BATCH_STATES
from distkpi_cli.local.github_standin import GitHubApp, GitHubStandIn
from distkpi_cli.local.handlers import LambdaContext, function_url_event, load_handlers
from distkpi_cli.local.iam import (
    ADMIN,
    Identity,
    Resolver,
    create_identity,
    function_roles,
    role_statements,
)
from distkpi_cli.local.queues import drain as drain_queue
from distkpi_cli.local.sam import expand
from distkpi_cli.local.template import load_template, resources_of_type
from tests.conftest import offline_aws

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "events"
WEBHOOK_SECRET = "it's a secret to everybody"
GITHUB_TOKEN = "ghs_test_token_never_logged"


def event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text())  # type: ignore[no-any-return]


@dataclass
class Stack:
    github: GitHubStandIn
    s3: Any
    batch: Any
    table: Any
    queue: str
    job_s3: Any = None
    identities: Any = None
    manifest_master: str = ""  # the master secret the launcher derives each config's key from
    handlers: dict[str, Any] = field(default_factory=dict)
    sqs: Any = None
    queues: WorkQueues | None = None

    def webhook(
        self,
        name: str = "pull_request",
        *,
        payload: dict[str, Any] | None = None,
        body: bytes | None = None,
        signature: str | None = None,
        delivery: str | None = None,
        base64_body: bool = False,
        github_event: str | None = None,
        context: LambdaContext | None = None,
        drain: bool = True,
    ) -> dict[str, Any]:
        """POST a GitHub delivery, as a Lambda Function URL event, to the real handler; a
        delivery it queued is then started by the launcher (in an invocation with
        ``context``'s time left), whose answer is returned, the webhook's under `queued`
        (``drain=False``: the webhook's own answer, the delivery left in the queue)."""
        recorded = event(name)
        raw = body if body is not None else json.dumps(payload or recorded["payload"]).encode()
        headers = {k.lower(): v for k, v in recorded["headers"].items()}
        if delivery:
            headers["x-github-delivery"] = delivery
        if github_event:
            headers["x-github-event"] = github_event
        headers["x-hub-signature-256"] = (
            signature if signature is not None else sign(WEBHOOK_SECRET.encode(), raw)
        )
        request = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/",
            "rawQueryString": "",
            "headers": headers,
            "requestContext": {
                "http": {
                    "method": "POST",
                    "path": "/",
                    "protocol": "HTTP/1.1",
                    "sourceIp": "192.30.252.1",
                    "userAgent": "GitHub-Hookshot/044aadd",
                },
                "requestId": "id",
                "routeKey": "$default",
                "stage": "$default",
                "domainName": "example.lambda-url.us-east-1.on.aws",
            },
            "body": base64.b64encode(raw).decode() if base64_body else raw.decode("latin-1"),
            "isBase64Encoded": base64_body,
        }
        response = self.handlers["webhook"].lambda_handler(request, LambdaContext())
        answered = {**response, "json": json.loads(response.get("body") or "null")}
        return self.started(answered, context) if drain else answered

    def deliver(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """A delivery as the stand-in makes it (signed by it), to the webhook, then the
        launcher: its status code and JSON answer."""
        response = self.handlers["webhook"].lambda_handler(
            function_url_event(headers, body), LambdaContext()
        )
        answered = self.started({**response, "json": json.loads(response.get("body") or "{}")})
        return int(answered["statusCode"]), answered["json"]

    def started(
        self, answered: dict[str, Any], context: LambdaContext | None = None
    ) -> dict[str, Any]:
        """The webhook's answer; for a delivery it queued, the launcher's once the queue is
        drained, with the webhook's under `queued`."""
        queued = answered["json"] if isinstance(answered["json"], dict) else {}
        if answered["statusCode"] != 202 or queued.get("message") != "delivery queued":
            return answered
        for started in self.launch(context):
            if started["delivery"] == queued["delivery"]:
                return {
                    "statusCode": started["status"],
                    "json": started["answer"],
                    "queued": answered,
                }
        raise AssertionError(f"delivery {queued['delivery']} queued but not started")

    def launch(self, context: LambdaContext | None = None) -> list[dict[str, Any]]:
        """Every queued delivery to the launcher (five to an invocation, as the template's
        event source gives them); each started delivery's answer."""
        assert self.queues is not None
        launcher = self.handlers["launcher"]
        return drain_queue(
            self.sqs,
            self.queues.deliveries,
            lambda event: launcher.lambda_handler(event, context or LambdaContext()),  # type: ignore[no-any-return]
            batch_size=5,
            answers_key="deliveries",
        ).answers

    def settle_overdue(self) -> int:
        """The overdue runs the sweeper handed over, each given to the deadlines function:
        how many it settled."""
        assert self.queues is not None
        deadlines = self.handlers["deadlines"]
        settled = 0

        def settle(event: dict[str, Any]) -> dict[str, Any]:
            nonlocal settled
            answer: dict[str, Any] = deadlines.lambda_handler(event, LambdaContext())
            settled += int(answer["settled"])
            return answer

        drain_queue(self.sqs, self.queues.overdue_runs, settle, batch_size=1)
        return settled

    def sweep(self, context: LambdaContext | None = None) -> dict[str, int]:
        """The sweeper's schedule, then what it handed over settled: what it reported, with
        the runs settled as `timed_out`."""
        swept: dict[str, int] = self.handlers["sweeper"].lambda_handler(
            {"source": "aws.events"}, context or LambdaContext()
        )
        return {**swept, "timed_out": self.settle_overdue()}

    def s3_event(self, key: str) -> dict[str, Any]:
        created = copy.deepcopy(event("s3_object_created_eventbridge"))
        created["resources"] = [f"arn:aws:s3:::{BUCKET}"]
        created["detail"]["bucket"]["name"] = BUCKET
        created["detail"]["object"]["key"] = key.replace(" ", "+")
        return created

    def collect(self, key: str) -> dict[str, Any]:
        return self.handlers["collector"].lambda_handler(self.s3_event(key), LambdaContext())  # type: ignore[no-any-return]

    def job_failed(self, job_id: str, reason: str) -> dict[str, Any]:
        detail_event = copy.deepcopy(event("batch_job_failed"))
        detail_event["detail"]["jobId"] = job_id
        detail_event["detail"]["statusReason"] = reason
        return self.handlers["job_events"].lambda_handler(detail_event, LambdaContext())  # type: ignore[no-any-return]

    def job_succeeded(self, job_id: str) -> dict[str, Any]:
        detail_event = copy.deepcopy(event("batch_job_succeeded"))
        detail_event["detail"]["jobId"] = job_id
        return self.handlers["job_events"].lambda_handler(detail_event, LambdaContext())  # type: ignore[no-any-return]

    def jobs(self) -> list[dict[str, Any]]:
        ids = []
        for status in BATCH_STATES:
            for page in self.batch.get_paginator("list_jobs").paginate(
                jobQueue=self.queue, jobStatus=status
            ):
                ids.extend(j["jobId"] for j in page["jobSummaryList"])
        if not ids:
            return []
        return self.batch.describe_jobs(jobs=sorted(set(ids)))["jobs"]  # type: ignore[no-any-return]


def make_dynamodb_writes_atomic(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB applies a conditional write atomically; moto's in-process backend checks the
    condition and writes without a lock, so concurrent test threads could both pass a
    condition that real DynamoDB lets only one pass. Its request handler also copies an
    item outside the backend while another thread may be writing it. One lock around each
    whole request restores DynamoDB's guarantee."""
    from moto.dynamodb.responses import DynamoHandler

    lock = threading.RLock()
    original = DynamoHandler.call_action

    def locked(self: Any) -> Any:
        with lock:
            return original(self)

    monkeypatch.setattr(DynamoHandler, "call_action", locked)


@functools.cache
def _parsed_template() -> dict[str, Any]:
    return load_template((ROOT / "template.yaml").read_text())


def template() -> dict[str, Any]:
    """template.yaml parsed once per test session; each caller gets its own copy."""
    return copy.deepcopy(_parsed_template())


@functools.cache
def template_grants() -> dict[str, list[dict[str, Any]]]:
    """The statements template.yaml, expanded by SAM, grants each handler (named as its
    folder) and the benchmark job; expanded once per test session."""
    expanded = expand(ROOT / "template.yaml")
    resolve = Resolver(STACK_NAME, REGION)
    folders = {
        name: Path(props["CodeUri"]).name
        for name, props in resources_of_type(
            _parsed_template(), "AWS::Serverless::Function"
        ).items()
    }
    grants = {
        folders[function]: role_statements(expanded, role, resolve)
        for function, role in function_roles(expanded).items()
    }
    return {**grants, "job": role_statements(expanded, "JobRole", resolve)}


def function_identities(iam: Any) -> dict[str, Identity]:
    """An identity per handler, the benchmark job's, and the tests' own (allowed anything)."""
    made = {name: create_identity(iam, name, grants) for name, grants in template_grants().items()}
    return {**made, "tests": create_identity(iam, "tests", ADMIN)}


class Identities:
    """Whose credentials the process's AWS calls carry, as in Lambda, where each function's
    come from its environment: a handler's own while it runs, the tests' between calls.
    Calls of one handler may overlap (events are delivered from several threads); another
    identity waits for them to end. Each identity's calls are one container's, whose wiring
    lasts the test (`wiring.reset()` starts them all afresh, as new containers would)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        made: dict[str, Identity],
        sessions: dict[str, boto3.Session],
    ) -> None:
        self.monkeypatch, self.made, self.sessions = monkeypatch, made, sessions
        # one container per identity, whose wiring (and boto3 clients) lasts the test
        self.containers = {name: wiring.Container() for name in made}
        self.changed = threading.Condition()
        self.current, self.running = "", 0
        self._switch("tests")
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", self.sessions["tests"])

    def _switch(self, name: str) -> None:
        identity = self.made[name]
        self.monkeypatch.setenv("AWS_ACCESS_KEY_ID", identity.access_key_id)
        self.monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", identity.secret_access_key)
        boto3.DEFAULT_SESSION = self.sessions[name]
        wiring.use(self.containers[name])
        self.current = name

    @contextmanager
    def acting_as(self, name: str) -> Iterator[None]:
        with self.changed:
            self.changed.wait_for(lambda: self.current == name or self.running == 0)
            if self.current != name:
                self._switch(name)
            self.running += 1
        try:
            yield
        finally:
            with self.changed:
                self.running -= 1
                if self.running == 0:
                    self._switch("tests")
                self.changed.notify_all()


@dataclass
class HandlerAs:
    """A handler module whose lambda_handler runs with its function's credentials."""

    module: ModuleType
    name: str
    identities: Identities

    def lambda_handler(self, event: Any, context: Any) -> Any:
        with self.identities.acting_as(self.name):
            return self.module.lambda_handler(event, context)


@dataclass
class SharedAws:
    """The stack's AWS, made once for the integration tests: moto's backends, the template's
    resources, an identity (and boto3 session) per function, and the handler modules."""

    made: Provisioned
    identities: dict[str, Identity]
    sessions: dict[str, boto3.Session]
    handlers: dict[str, ModuleType]
    github: GitHubStandIn
    manifest_master: str  # made once with the stack; no test changes it
    clients: dict[tuple[str, str], Any] = field(default_factory=dict)

    def client(self, identity: str, service: str) -> Any:
        """One boto3 client per identity and service for the package: a client keeps nothing
        of one test's calls for the next, and making one costs tens of milliseconds."""
        if (identity, service) not in self.clients:
            self.clients[identity, service] = self.sessions[identity].client(service)
        return self.clients[identity, service]

    @functools.cached_property
    def table(self) -> Any:
        return self.sessions["tests"].resource("dynamodb").Table(TABLE)

    def reset(self, app: GitHubApp | None) -> None:
        """Every item, object, job, queue, subscription and recorded request a test left
        goes; the secrets hold what the stack was made with. What stays is what the
        template made, exactly as provision left it."""
        _empty_table()
        _empty_bucket(self.client("tests", "s3"))
        _forget_jobs()
        sqs, sns = self.client("tests", "sqs"), self.client("tests", "sns")
        kept = self.made.queues.all() if self.made.queues else ()
        for url in sqs.list_queues().get("QueueUrls", []):
            if url in kept:
                _empty_queue(url)
            else:
                sqs.delete_queue(QueueUrl=url)
        for subscription in sns.list_subscriptions()["Subscriptions"]:
            sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])
        sm = self.client("tests", "secretsmanager")
        for secret_id, value in {
            WEBHOOK_SECRET_ID: WEBHOOK_SECRET,
            GITHUB_TOKEN_SECRET_ID: GITHUB_TOKEN,
            GITHUB_APP_SECRET_ID: app.secret() if app else "replace-me",
        }.items():
            sm.put_secret_value(SecretId=secret_id, SecretString=value)
        if app is None:
            self.github.reset(token=GITHUB_TOKEN)
        else:
            self.github.reset(app=app)


SUITES = [ROOT / "infra" / "suites" / "resnet50.yaml"]


def _empty_table() -> None:
    """Every item goes, as if each were deleted (the table has no stream to tell): its
    backend forgets them at once, where a scan and batched deletes took up to a second
    after a test that wrote a long history."""
    from moto.dynamodb.models import dynamodb_backends

    dynamodb_backends[ACCOUNT][REGION].tables[TABLE].items.clear()


def _empty_bucket(s3: Any) -> None:
    """No object but the suites, as provision left it (the bucket keeps no versions)."""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if objects:
            s3.delete_objects(Bucket=BUCKET, Delete={"Objects": objects})
    for suite in SUITES:
        s3.put_object(Bucket=BUCKET, Key=f"suites/{suite.name}", Body=suite.read_bytes())


def _empty_queue(url: str) -> None:
    """No message left, in flight or not (SQS purges a queue once a minute at most)."""
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[ACCOUNT][REGION].get_queue(url.rsplit("/", 1)[-1])
    queue._messages = []
    queue._pending_messages = set()


def _forget_jobs() -> None:
    """Batch has no call that deletes a job: its backend forgets them (moto ran none)."""
    from moto.batch.models import batch_backends

    backend = batch_backends[ACCOUNT][REGION]
    backend._jobs.clear()
    for queue in backend._job_queues.values():
        queue.jobs.clear()


def _s3_urls_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's S3 backend reloads its URL module on every request, in case the variables
    that name custom endpoints changed (no test sets them): about 2% of this package's time.
    The module is read once for the package instead."""
    import moto.s3.urls
    from moto.s3.models import S3Backend

    monkeypatch.setattr(S3Backend, "_url_module", property(lambda self: moto.s3.urls))


def _clients_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each handler's container makes its boto3 clients afresh, as a new Lambda container
    would: about 5% of this package's time went to building the same clients of the same
    few sessions again. A client keeps no state of its calls and is thread-safe, so each
    session makes each (identically configured) client once for the package. Resources are
    not thread-safe and are still made per thread."""
    made: dict[tuple[int, str, str], tuple[boto3.Session, Any]] = {}
    original = boto3.Session.client
    lock = threading.Lock()

    def client(self: boto3.Session, *args: Any, **kwargs: Any) -> Any:
        key = (id(self), repr(args), repr(sorted(kwargs.items())))
        with lock:
            kept = made.get(key)
            if kept is None or kept[0] is not self:
                kept = made[key] = (self, original(self, *args, **kwargs))
            return kept[1]

    monkeypatch.setattr(boto3.Session, "client", client)


@pytest.fixture(scope="package")
def shared_aws() -> Iterator[SharedAws]:
    """moto's backends for the whole package (not the session: the e2e tests talk to moto's
    server, which an in-process mock would intercept)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        offline_aws(monkeypatch)
        _s3_urls_read_once(monkeypatch)
        _clients_made_once(monkeypatch)
        github = GitHubStandIn(token=GITHUB_TOKEN)
        github.start()
        with mock_aws(config={"batch": {"use_docker": False}}):
            made = provision(
                boto3.client,
                template(),
                SUITES,
                webhook_secret=WEBHOOK_SECRET,
                github_token=GITHUB_TOKEN,
                github_app=None,
            )
            identities = function_identities(boto3.client("iam"))
            # one boto3 session per identity: a new one would build its clients anew
            sessions = {name: boto3.Session(**i.credentials()) for name, i in identities.items()}
            master = boto3.client("secretsmanager").get_secret_value(SecretId=MANIFEST_SECRET_ID)
            handlers = load_handlers(ROOT)
            yield SharedAws(made, identities, sessions, handlers, github, master["SecretString"])
        github.stop()


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch, shared_aws: SharedAws) -> Iterator[Stack]:
    yield from _stack(monkeypatch, shared_aws, app=None)


@pytest.fixture
def app_stack(monkeypatch: pytest.MonkeyPatch, shared_aws: SharedAws) -> Iterator[Stack]:
    """The stack signed in as a GitHub App: check runs, re-runs, installation tokens."""
    yield from _stack(monkeypatch, shared_aws, app=GitHubApp())


def _stack(
    monkeypatch: pytest.MonkeyPatch, aws: SharedAws, app: GitHubApp | None
) -> Iterator[Stack]:
    make_dynamodb_writes_atomic(monkeypatch)
    offline_aws(monkeypatch)
    for key, value in {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "distkpi",
        "POWERTOOLS_SERVICE_NAME": "distkpi",
    }.items():
        monkeypatch.setenv(key, value)
    aws.reset(app)
    github = aws.github
    if github.stopped:  # a test stopped it to take GitHub down
        github.start()
    made = replace(aws.made, github_app=app is not None)
    environment = function_environment(made, github.url)
    environment |= {"GITHUB_BACKOFF_S": "0", "REPORT_BASE_URL": "https://distkpi.example.com"}
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED")
    identities = Identities(monkeypatch, aws.identities, aws.sessions)
    stack = Stack(
        github=github,
        s3=aws.client("tests", "s3"),
        batch=aws.client("tests", "batch"),
        table=aws.table,
        queue=made.job_queue,
        job_s3=aws.client("job", "s3"),
        identities=identities,
        manifest_master=aws.manifest_master,
        sqs=aws.client("tests", "sqs"),
        queues=made.queues,
    )
    stack.handlers = {
        name: HandlerAs(module, name, identities)  # type: ignore[misc]
        for name, module in aws.handlers.items()
    }
    with enable_iam_authentication():
        yield stack
    wiring.reset()
