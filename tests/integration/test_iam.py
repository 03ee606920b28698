"""The integration stack enforces IAM as template.yaml grants it (see conftest): here, what
the benchmark job's role may and may not do, with the node runner's own code."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from distkpi_cli.node.runner import NodeRunner
from tests.integration.conftest import BUCKET, Stack
from tests.unit.test_node_runner import make_repo, node_env


def test_a_two_node_job_meets_uploads_and_waits_with_the_job_roles_rights(
    stack: Stack, tmp_path: Path
) -> None:
    """Rendezvous (put, list and read rendezvous/), the uploads, and the main node listing
    its config's folder while it waits: all as the job role allows, or the job fails."""
    repo, _, tip = make_repo(tmp_path / "bench")
    prefix = {"DISTKPI_S3_PREFIX": f"s3://{BUCKET}/runs/r1/c/"}
    envs = [node_env(repo, tip, tmp_path / "work", n, 2, 0, **prefix) for n in (0, 1)]
    with stack.identities.acting_as("job"), ThreadPoolExecutor(2) as pool:
        codes = list(pool.map(lambda env: NodeRunner(env, ["python3", "bench.py"]).run(), envs))
    assert codes == [0, 0]
    listed = stack.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/r1/c/")["Contents"]
    keys = {o["Key"] for o in listed}
    assert {"runs/r1/c/node-0.json", "runs/r1/c/node-1.json"} <= keys
    assert "runs/r1/c/rendezvous/node-1.endpoint" in keys


def test_the_job_may_not_read_delete_or_write_outside_runs(stack: Stack) -> None:
    key = "runs/r1/1x1/node-0.json"
    stack.job_s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}")
    forbidden = [
        lambda: stack.job_s3.get_object(Bucket=BUCKET, Key=key),
        lambda: stack.job_s3.delete_object(Bucket=BUCKET, Key=key),
        lambda: stack.job_s3.put_object(Bucket=BUCKET, Key="suites/evil.yaml", Body=b"x"),
        lambda: stack.job_s3.put_object(Bucket=BUCKET, Key="reports/r1/index.html", Body=b"x"),
    ]
    for call in forbidden:
        with pytest.raises(ClientError, match="AccessDenied"):
            call()
