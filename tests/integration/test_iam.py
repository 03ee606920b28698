"""The integration stack enforces IAM as template.yaml grants it (see conftest): here, what
the benchmark job's role may and may not do, with the job's own upload code."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.integration.conftest import BUCKET, ROOT, Stack

PREFIX = f"s3://{BUCKET}/runs/r1/2x8-1ps/"


@pytest.fixture
def job_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "infra" / "job"))


@pytest.mark.usefixtures("job_code")
def test_the_main_node_may_list_its_config_folder_while_it_waits(
    stack: Stack, tmp_path: Path
) -> None:
    from distkpi_job.upload import NodeFile, upload, wait_for_manifests

    log = tmp_path / "trainer-0.log"
    log.write_text("hello\n")
    with stack.identities.acting_as("job"):
        for node in (0, 1, 2):
            upload(PREFIX, node, [NodeFile(log, "trainer", 0, "log")], {"schema": 1, "node": node})
        assert wait_for_manifests(PREFIX, [1, 2], timeout_s=0) == []


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
