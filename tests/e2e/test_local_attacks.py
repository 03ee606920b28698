"""`distkpi local` against code under test that attacks the stack it runs beside: it finds
moto's server on 127.0.0.1 through /proc/net/tcp, as any process of the machine can, and
tries what a hostile merge request would."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest

from distkpi_cli.local.demo import run_local
from tests.conftest import git
from tests.e2e.test_local import commit_all

pytestmark = pytest.mark.e2e

SUITE = """
name: attack
command: ["python", "attack.py"]
target_accuracy: 0.6
accuracy_pass: 1
accuracy_tolerance: 0.2
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 64}
"""

# What the attacker commits: every listening socket of 127.0.0.1, every call it can make
# there, signed with made-up keys (as boto3 would with "local"/"local") and unsigned, and
# moto's own API. It writes what it got into DISTKPI_LOG_DIR, uploaded as a kept file.
ATTACK = r"""
import json, os, socket, sys, urllib.request, urllib.error

import botocore.session
from botocore.config import Config

TARGET = "@TARGET@"
run_id = os.environ["DISTKPI_RUN_ID"]
listening = {
    int(line.split()[1].split(":")[1], 16)
    for line in open("/proc/net/tcp").read().splitlines()[1:]
    if line.split()[3] == "0A" and line.split()[1].startswith("0100007F:")
}
# every listening port would do; the test's own stack's only, to leave other stacks of the
# machine alone
ports = sorted(listening & {@PORTS@})
got = {"ports": ports, "aws_like": [], "succeeded": []}

def raw(method, url, data=None):
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as answer:
            return answer.status, answer.read(200000)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(2000)
    except Exception as exc:
        return None, repr(exc).encode()

session = botocore.session.get_session()
for port in ports:
    url = f"http://127.0.0.1:{port}"
    def client(name):
        return session.create_client(
            name, endpoint_url=url, region_name="us-east-1",
            aws_access_key_id="local", aws_secret_access_key="local",
            config=Config(retries={"max_attempts": 1}, connect_timeout=3, read_timeout=5),
        )
    attempts = {
        "s3 put through the dispatcher's download": lambda: client("s3").put_object(
            Bucket="distkpi-runs-123456789012-us-east-1",
            Key=f"runs/{run_id}/" + TARGET, Body=b"owned\n"),
        "secrets manager: the manifest master secret": lambda: client(
            "secretsmanager").get_secret_value(SecretId="distkpi-local-manifest-master"),
        "dynamodb scan": lambda: client("dynamodb").scan(TableName="distkpi-local"),
        "sqs list": lambda: client("sqs").list_queues(),
    }
    for name, call in attempts.items():
        try:
            call()
            got["succeeded"].append(f"{port}: {name}")
        except Exception as exc:
            text = str(exc)
            if any(w in text for w in ("InvalidAccessKeyId", "InvalidClientTokenId",
                                       "UnrecognizedClient", "403", "AccessDenied")):
                got["aws_like"].append(port)
    unsigned = raw("PUT", f"{url}/distkpi-runs-123456789012-us-east-1/runs/{run_id}/"
                   + TARGET, b"owned\n")
    if unsigned[0] == 200:
        got["succeeded"].append(f"{port}: unsigned s3 put")
    for path, method, body in (("/moto-api/data.json", "GET", None),
                               ("/moto-api/reset-auth", "POST", b"inf"),
                               ("/moto-api/reset", "POST", b"")):
        status, _ = raw(method, url + path, body)
        if status == 200:
            got["succeeded"].append(f"{port}: {method} {path}")

folder = os.environ["DISTKPI_LOG_DIR"]
with open(os.path.join(folder, "attack.json"), "w") as out:
    json.dump(got, out)
print("attack:", json.dumps(got))
"""


def free_port_pair() -> int:
    """A port free now, with the next one free too (moto's and the GitHub stand-in's)."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two free ports in a row on 127.0.0.1")


def test_the_code_under_test_cannot_use_the_local_stack_aws(tmp_path: Path) -> None:
    """Given code that finds moto and calls it (a PUT of runs/<run>//<absolute path> for
    the dispatcher to write out, the manifest master secret, the table, moto's own API),
    when `distkpi local` runs it, then moto refuses every call and nothing is written
    outside the run folder."""
    target = tmp_path / "outside" / "owned"
    repo = tmp_path / "repo"
    repo.mkdir()
    port = free_port_pair()
    attack = ATTACK.replace("@TARGET@", str(target)).replace("@PORTS@", f"{port}, {port + 1}")
    (repo / "attack.py").write_text(attack)
    git(repo, "init", "-q", "--initial-branch=main")
    commit_all(repo, "an innocent change")
    suite = tmp_path / "attack.yaml"
    suite.write_text(SUITE)

    result = run_local(suite, tmp_path / "out", source=repo, progress=io.StringIO(), port=port)

    assert not target.exists()
    kept = result.runs[0].folder / "1x1" / "files" / "trainer-0" / "attack.json"
    got = json.loads(kept.read_text())
    assert got["ports"] == [port, port + 1], "the attack did not find the stack's ports"
    assert got["aws_like"], f"the attack found no AWS on 127.0.0.1: {got}"
    assert got["succeeded"] == []
