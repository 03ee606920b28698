"""`distkpi local calibrate`: A/A jobs of a suite on the local stack, started as on GitHub
(a repository dispatch to the stand-in, which delivers the signed repository_dispatch
webhook), run with real training, then reported as `distkpi calibrate` reports them."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from distkpi.adapters.dynamo import DynamoTable
from distkpi.domain.planning.suites import load_suite
from distkpi.exceptions import CalibrationError, DistkpiError
from distkpi_cli.calibration_report import Report, calibration_report
from distkpi_cli.github_dispatch import ask_calibration
from distkpi_cli.local.aws_stack import TABLE
from distkpi_cli.local.demo import commits_of
from distkpi_cli.local.dispatch import Dispatcher
from distkpi_cli.local.github_standin import DEFAULT_BRANCH
from distkpi_cli.local.handlers import project_root
from distkpi_cli.local.stack import LocalStack, local_stack
from distkpi_cli.local.state import StateFolder

DELIVERY_TIMEOUT_S = 60


def calibrate_local(
    suite: Path,
    out: Path,
    rev: str = "HEAD",
    *,
    jobs: int = 3,
    drop: float = 0.25,
    source: Path | None = None,
    repo: str = "local/demo",
    state: StateFolder | None = None,
    fresh: bool = False,
    progress: TextIO = sys.stderr,
) -> Report:
    """``jobs`` A/A jobs of ``suite`` at ``rev`` of ``source`` (default this checkout), their
    history kept under develop in the ``state`` folder, and the calibration of every A/A
    job that history holds."""
    source = source or project_root()
    (sha,) = commits_of(source, rev, 1)
    model = load_suite(suite).name
    with local_stack(suite, progress, state=state, fresh=fresh, repository=source) as stack:
        run_ids = _start(stack, repo, sha, model, jobs)
        dispatch = Dispatcher(stack, out, source)
        dispatch.run_jobs(run_ids, {})
        for run in dispatch.wait_settled(run_ids):
            assert run.evaluation is not None, "a settled run has its evaluation"
            stack.say(f"run {run.run_id}: {run.evaluation.description}")
        try:
            return calibration_report(DynamoTable(TABLE), repo, DEFAULT_BRANCH, model, drop=drop)
        except CalibrationError as exc:  # too few jobs yet: their history is kept all the same
            unsplit = exc
    raise unsplit


def _start(stack: LocalStack, repo: str, sha: str, model: str, jobs: int) -> list[str]:
    """Ask the stand-in for the repository dispatch; the runs its delivery started."""
    before = len(stack.github.deliveries)
    asked = {"sha": sha, "model": model, "jobs": jobs, "branch": DEFAULT_BRANCH}
    ask_calibration(stack.github.url, repo, stack.aws.github_token, asked)
    delivered = _delivery(stack, before)
    if delivered["status_code"] != 201:
        raise DistkpiError(
            f"the webhook answered the calibration's delivery {delivered['status_code']}: "
            f"{delivered['answer']}"
        )
    runs = list(delivered["answer"]["runs"])
    stack.say(f"webhook: repository_dispatch {sha[:10]} -> runs {', '.join(runs)}")
    return runs


def _delivery(stack: LocalStack, before: int) -> dict[str, Any]:
    """GitHub delivers after it answers: the first delivery after the ``before`` seen."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        deliveries = stack.github.deliveries
        if len(deliveries) > before:
            return deliveries[before]
        time.sleep(0.05)
    raise DistkpiError(f"the stand-in delivered no repository_dispatch in {DELIVERY_TIMEOUT_S}s")
