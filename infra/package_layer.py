"""Build the Lambda layer as `sam build` does and prove that it is the tested one.

    python infra/package_layer.py [--out out/package]      (make package)

1. The layer: the locked requirements (layers/distkpi/requirements.txt) installed as wheels
   for the runtime (CPython 3.12, manylinux x86_64) into <out>/layer/python, boto3 and
   botocore with them, no .pyc files; the distkpi package copied beside them. A package
   that the lock does not name is an error: the lock is stale (`make lock`).
2. Its unzipped size, against Lambda's limit for a function and its layers (262,144,000
   bytes): at most 75% of it.
3. A fresh Python 3.12 environment (found on the PATH or through pyenv, never at a fixed
   place) that holds nothing but the layer imports each of the six handlers and handles
   events from tests/events against moto, run here beside it (moto's server and a GitHub
   stand-in on 127.0.0.1; the handlers reach them through endpoint variables): a signed
   push is queued by the webhook and started by the launcher from its SQS message, the
   collector settles its 1x1 config from the seed run's node (its manifest's summaries),
   job_events fails the other configs' jobs, which ends the run and publishes its report
   and status, the sweeper sweeps and the deadlines function takes an overdue-run message
   of the finished run (and leaves it be). Every
   module a handler imports must come from the layer, its function's folder or the
   standard library.

Exit status 0 when all of it holds, 1 with the reason otherwise.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "infra"))

from lock_layer import LAYER, LOCK, RUNTIME_PYTHON, RUNTIME_TARGET  # noqa: E402

from distkpi_cli.local.aws_stack import TABLE  # noqa: E402

LAMBDA_UNZIPPED_LIMIT = 262_144_000  # bytes, a function and all its layers
SIZE_SHARE = 0.75
HANDLERS = ("webhook", "launcher", "collector", "job_events", "sweeper", "deadlines")
EVENTS = ROOT / "tests" / "events"


class PackageError(Exception):
    """Why the layer is not the deployable, tested one."""


def locked() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[_canonical(name)] = version
    return pins


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build_layer(layer: Path) -> None:
    shutil.rmtree(layer, ignore_errors=True)
    python = layer / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-compile",
            "--target",
            str(python),
            *RUNTIME_TARGET,
            "-r",
            str(LOCK),
        ],
        check=True,
    )
    installed = {}
    for info in python.glob("*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        installed[_canonical(name)] = version
    if installed != locked():
        extra = sorted(set(installed.items()) - set(locked().items()))
        raise PackageError(f"the layer holds what the lock does not say: {extra}; run make lock")
    shutil.copytree(
        LAYER / "distkpi", python / "distkpi", ignore=shutil.ignore_patterns("__pycache__")
    )
    compiled = [p for p in python.rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"]
    if compiled:
        raise PackageError(f"compiled files in the layer, e.g. {compiled[0]}")


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def runtime_python() -> str:
    """A Python RUNTIME_PYTHON: on the PATH, else one that pyenv has."""
    candidates = [shutil.which(f"python{RUNTIME_PYTHON}")]
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        listed = subprocess.run(
            [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
        ).stdout.split()
        for version in listed:
            if version.startswith(f"{RUNTIME_PYTHON}."):
                prefix = subprocess.run(
                    [pyenv, "prefix", version], capture_output=True, text=True, check=False
                ).stdout.strip()
                candidates.append(str(Path(prefix) / "bin" / f"python{RUNTIME_PYTHON}"))
    for candidate in filter(None, candidates):
        answer = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if answer.returncode == 0 and answer.stdout.strip() == RUNTIME_PYTHON:
            return candidate
    raise PackageError(
        f"no Python {RUNTIME_PYTHON} here (none on the PATH as python{RUNTIME_PYTHON}, none "
        f"in pyenv): the layer cannot be tried on the runtime's Python; install one"
    )


def fresh_environment(python: str, where: Path) -> Path:
    """A virtual environment with nothing installed, not even pip."""
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run([python, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return data


@contextmanager
def local_aws() -> Iterator[tuple[Any, Any, dict[str, str]]]:
    """moto's server and the GitHub stand-in on 127.0.0.1, provisioned from template.yaml;
    the environment the handlers get, as template.yaml gives theirs."""
    import logging
    from unittest import mock

    from moto.server import ThreadedMotoServer

    from distkpi_cli.local.aws_stack import aws_environment, create_local_aws, function_environment
    from distkpi_cli.local.github_standin import GitHubStandIn

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    github = GitHubStandIn()
    try:
        with mock.patch.dict(os.environ):
            host, port = server.get_host_and_port()
            endpoint = f"http://{host}:{port}"
            aws = create_local_aws(
                endpoint, ROOT / "template.yaml", ROOT / "infra" / "suites" / "local.yaml"
            )
            github.token = aws.github_token
            env = aws_environment(endpoint) | function_environment(aws, github.start())
            yield aws, github, env
    finally:
        github.stop()
        server.stop()


class Invoker:
    """Each handler in its own process of the fresh environment, with only the layer."""

    def __init__(self, python: Path, layer: Path, env: dict[str, str], events: Path) -> None:
        self.python, self.layer, self.env, self.events = python, layer, env, events

    def __call__(self, handler: str, *events: dict[str, Any]) -> list[Any]:
        paths = []
        for n, event in enumerate(events):
            path = self.events / f"{handler}-{n}.json"
            path.write_text(json.dumps(event))
            paths.append(str(path))
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(self.layer / "python"),
            "AWS_LAMBDA_FUNCTION_NAME": f"distkpi-{handler}",
            **self.env,
        }
        folder = ROOT / "functions" / handler
        proc = subprocess.run(
            [
                str(self.python),
                "-B",
                "-s",
                str(ROOT / "infra" / "invoke_handler.py"),
                str(folder),
                *paths,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
            check=False,
        )
        if proc.returncode != 0:
            raise PackageError(f"{handler} failed on the layer:\n{proc.stderr[-3000:]}")
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
        if answer["python"][:2] != [int(p) for p in RUNTIME_PYTHON.split(".")]:
            raise PackageError(f"{handler} ran on Python {answer['python']}")
        if answer["foreign_modules"]:
            raise PackageError(
                f"{handler} imported from outside the layer: {answer['foreign_modules']}"
            )
        if not Path(answer["boto3"]).is_relative_to(self.layer):
            raise PackageError(f"{handler} imported boto3 from {answer['boto3']}, not the layer")
        print(f"  {handler}: {json.dumps(answer['results'])[:200]}")
        results: list[Any] = answer["results"]
        return results


def webhook_event(secret: str) -> tuple[dict[str, Any], str]:
    """tests/events/push.json as GitHub signs it and a Function URL hands it on."""
    from distkpi_cli.local.handlers import signed_function_url_event

    push = recorded("push")
    body = json.dumps(push["payload"]).encode()
    return signed_function_url_event(secret, push["headers"], body), push["payload"]["after"]


def queued(aws: Any, url: str) -> dict[str, Any]:
    """The queue's messages as Lambda hands them to its function (an SQS event)."""
    from distkpi_cli.local.queues import sqs_event

    sqs = aws.client("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    return sqs_event(messages, arn["QueueArn"])


def node_reports(aws: Any, run_id: str, config: str) -> dict[str, Any]:
    """The seed run's 1x1 node as `distkpi node` reports it (its files, then its manifest
    with their digests and summaries and its run and config, signed with the config's key
    derived from the stack's master secret), and the S3 event of
    the EventBridge event of its manifest (the collector's rule), tests/events/
    s3_object_created_eventbridge.json pointed at it."""
    from distkpi.domain.logs.engineversion import engine_version
    from distkpi.domain.signing import config_key, sign
    from distkpi_cli.local.aws_stack import BUCKET, MANIFEST_SECRET_ID
    from distkpi_cli.node.summaries import describe

    s3, seed = aws.client("s3"), ROOT / "examples" / "seed-run" / "1x1"
    master = aws.client("secretsmanager").get_secret_value(SecretId=MANIFEST_SECRET_ID)
    key = config_key(master["SecretString"], run_id, config)
    manifest = json.loads((seed / "node-0.json").read_text())
    manifest |= {"run_id": run_id, "config": config}
    for entry in manifest["files"]:
        with (seed / entry["path"]).open("rb") as stream:
            entry.update(describe(stream, entry["kind"]))
        body = (seed / entry["path"]).read_bytes()
        s3.put_object(Bucket=BUCKET, Key=f"runs/{run_id}/{config}/{entry['path']}", Body=body)
    manifest["engine_version"] = engine_version()
    where = f"runs/{run_id}/{config}/node-0.json"
    s3.put_object(Bucket=BUCKET, Key=where, Body=json.dumps(sign(key, manifest)))
    event = copy.deepcopy(recorded("s3_object_created_eventbridge"))
    event["resources"] = [f"arn:aws:s3:::{BUCKET}"]
    event["detail"]["bucket"]["name"] = BUCKET
    event["detail"]["object"]["key"] = where
    return event


def try_handlers(python: Path, layer: Path) -> None:
    with local_aws() as (aws, github, env), tempfile.TemporaryDirectory() as tmp:
        invoke = Invoker(python, layer, env, Path(tmp))
        event, sha = webhook_event(aws.webhook_secret)
        (answer,) = invoke("webhook", event)
        if answer.get("statusCode") != 202:
            raise PackageError(f"webhook answered {answer}")
        (launched,) = invoke("launcher", queued(aws, aws.queues.deliveries))
        if launched["batchItemFailures"] or len(launched["deliveries"]) != 1:
            raise PackageError(f"the launcher did not start the queued push: {launched}")
        started = launched["deliveries"][0]
        if started["status"] != 201:
            raise PackageError(f"the launcher answered {started}")
        batch = aws.client("batch")
        jobs = [
            job["jobId"]
            for status in ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED")
            for job in batch.list_jobs(jobQueue=aws.job_queue, jobStatus=status)["jobSummaryList"]
        ]
        if not jobs:
            raise PackageError("the webhook submitted no job")
        (run_id,) = started["answer"]["runs"]
        (handled,) = invoke("collector", node_reports(aws, run_id, "1x1"))
        config = aws.client("dynamodb").get_item(
            TableName=TABLE, Key={"PK": {"S": f"RUN#{run_id}"}, "SK": {"S": "CONFIG#1x1"}}
        )["Item"]
        if handled != {"handled": 1} or config["state"]["S"] != "ok":
            raise PackageError(f"the collector did not settle 1x1 from its node: {config}")
        failures = []
        for job in sorted(set(jobs) - {config["job_id"]["S"]}):
            failed = copy.deepcopy(recorded("batch_job_failed"))
            failed["detail"]["jobId"] = job
            failures.append(failed)
        settled = invoke("job_events", *failures)
        if settled != [{"settled_config": True}] * len(failures):
            raise PackageError("job_events did not settle the run's failed jobs")
        invoke("sweeper", recorded("scheduled"))
        message = json.dumps({"run_id": run_id})
        aws.client("sqs").send_message(QueueUrl=aws.queues.overdue_runs, MessageBody=message)
        (late,) = invoke("deadlines", queued(aws, aws.queues.overdue_runs))
        if late != {"batchItemFailures": [], "settled": 0}:
            raise PackageError(f"the deadlines function settled a finished run: {late}")
        states = [s["state"] for s in github.statuses if s["sha"] == sha]
        if states[:1] != ["pending"] or states[-1:] != ["error"]:
            raise PackageError(f"GitHub got {states} for {sha}, not pending then error")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "package")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    try:
        layer = out / "layer"
        build_layer(layer)
        size, limit = size_of(layer), int(LAMBDA_UNZIPPED_LIMIT * SIZE_SHARE)
        print(
            f"layer: {layer} {size / 1e6:.1f} MB unzipped "
            f"({size / LAMBDA_UNZIPPED_LIMIT:.0%} of Lambda's {LAMBDA_UNZIPPED_LIMIT / 1e6:.0f} MB)"
        )
        if size > limit:
            raise PackageError(f"the layer is {size} bytes, over {limit} ({SIZE_SHARE:.0%})")
        python = fresh_environment(runtime_python(), out / "runtime")
        print(f"runtime: {python} (Python {RUNTIME_PYTHON}, nothing installed)")
        try_handlers(python, layer)
    except (PackageError, subprocess.CalledProcessError) as exc:
        print(f"make package: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
    print("make package: the layer imports and runs all six handlers on the runtime's Python")


if __name__ == "__main__":
    main()
