"""`distkpi local`: merge requests through the whole pipeline on this machine, with real
training processes, and what it prints."""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from distkpi.domain.judging import Judgement
from distkpi.domain.kpis import RunKpis
from distkpi.domain.records import RunRecord
from distkpi.local.dispatch import Dispatcher
from distkpi.local.executor import JobOutcome
from distkpi.local.stack import LocalStack, local_stack


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
    with local_stack(suite, progress) as stack:
        stack.say(
            f"local stack up: AWS (moto) at {stack.aws.endpoint}, GitHub at {stack.github.url}"
        )
        dispatch = Dispatcher(stack, out)
        base = _sha(sha, 0)
        runs: list[RunRecord] = []
        jobs: list[JobOutcome] = []
        for n in range(1, commits):
            pushed = _sha(sha, n)
            runs += _run_commit(stack, dispatch, repo, pushed, base, push=True, jobs=jobs)
            base = pushed
        runs += _run_commit(
            stack, dispatch, repo, sha, base, push=False, jobs=jobs, faults=faults or {}
        )
        results = [_result(dispatch, run) for run in runs]
        stack.say(f"done: {len(jobs)} job(s), {stack.events_delivered} S3 event(s) delivered")
        return LocalResult(
            list(stack.github.statuses),
            results,
            jobs,
            stack.events_delivered,
            time.monotonic() - stack.started,
        )


def _run_commit(
    stack: LocalStack,
    dispatch: Dispatcher,
    repo: str,
    sha: str,
    base: str,
    *,
    push: bool,
    jobs: list[JobOutcome],
    faults: dict[tuple[str, int], int] | None = None,
) -> list[RunRecord]:
    run_ids = stack.send_webhook(repo, sha, base, push=push)
    jobs += dispatch.run_jobs(run_ids, faults or {})
    runs = dispatch.wait_settled(run_ids)
    for run in runs:
        assert run.evaluation is not None
        verdict = run.evaluation.verdict.state.value
        stack.say(f"run {run.run_id}: {verdict} - {run.evaluation.description}")
    return runs


def _result(dispatch: Dispatcher, run: RunRecord) -> RunResult:
    evaluation = run.evaluation
    assert evaluation is not None, "a settled run has its evaluation"
    folder, report = dispatch.copy_out(run.run_id)
    return RunResult(
        run.run_id,
        run.trigger.event,
        evaluation.kpis,
        run.spec.target_accuracy,
        evaluation.verdict.state.value,
        evaluation.description,
        folder,
        report,
        list(evaluation.judgements),
    )


def print_result(result: LocalResult, out: TextIO = sys.stdout) -> None:
    """The earlier runs in a line each, then the last run's table, judgements and verdict,
    where its files are, and every status GitHub received."""
    from distkpi.domain.table import render_judgements, render_table

    for run in result.runs[:-1]:
        print(f"{run.event:12s} {run.run_id}: {run.state} - {run.description}", file=out)
    last = result.runs[-1]
    print(render_table(last.kpis, last.target_accuracy), file=out)
    if any(j.baseline is not None for j in last.judgements):
        print("\nagainst the baseline (develop):", file=out)
        print(render_judgements(last.judgements), file=out)
    else:
        print("\nno baseline yet: develop has no history (--commits 3 builds one first)", file=out)
    print(f"\nverdict: {last.state} - {last.description}", file=out)
    print(f"logs and KPIs: {last.folder}  (distkpi kpis {last.folder})", file=out)
    print(f"report: {last.report}\n", file=out)
    print("statuses GitHub received:", file=out)
    for status in result.statuses:
        print(
            f"  {status['sha'][:10]}  {status['context']:16s} {status['state']:8s} "
            f"{status['description']}",
            file=out,
        )
