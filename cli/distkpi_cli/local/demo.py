"""`distkpi local`: merge requests through the whole pipeline on this machine, with real
training processes, and what it prints."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from distkpi.adapters.batch import gpus_requested
from distkpi.adapters.dynamo import DynamoTable, HistoryRepository
from distkpi.adapters.dynamo.bisections import BisectionRepository
from distkpi.domain.accuracy import Target
from distkpi.domain.bisect.plan import Bisection, BisectState
from distkpi.domain.history_rows import recent_gpu_hours
from distkpi.domain.judging.statistics import Judgement
from distkpi.domain.kpis.engine import RunKpis
from distkpi.domain.records import RunRecord
from distkpi.exceptions import DistkpiError
from distkpi_cli.local.aws_stack import TABLE
from distkpi_cli.local.dispatch import Dispatcher
from distkpi_cli.local.executor import JobOutcome
from distkpi_cli.local.github_standin import GitHubStandIn, RemoteStandIn
from distkpi_cli.local.handlers import project_root
from distkpi_cli.local.stack import LocalStack, local_stack
from distkpi_cli.local.state import StateFolder

# the base branch's newest history rows read for a cost estimate: 5 runs of up to 20 configs
RECENT_ROWS = 100


@dataclass
class RunResult:
    run_id: str
    event: str
    kpis: RunKpis
    target_accuracy: Target
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
    checks: list[dict[str, Any]] | None = None  # with --github-app
    # the bisections of the pushes' regressions (Bisection.summary()): with --push-from,
    # or when a push started one
    bisections: list[dict[str, Any]] | None = None
    # the pull requests' comments as they stand, and what the chat stand-in was posted
    comments: list[dict[str, Any]] = field(default_factory=list)
    chat: list[dict[str, Any]] = field(default_factory=list)

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
            **({"checks": self.checks} if self.checks is not None else {}),
            **({"bisections": self.bisections} if self.bisections is not None else {}),
            **({"comments": self.comments} if self.comments else {}),
            **({"chat": self.chat} if self.chat else {}),
        }


def commits_of(source: Path, rev: str, count: int) -> list[str]:
    """``rev`` and the ``count`` - 1 commits before it on its first-parent line, oldest
    first, as full shas."""
    listed = subprocess.run(
        ["git", "-C", str(source), "rev-list", "--first-parent", f"--max-count={count}", rev, "--"],
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        raise DistkpiError(f"{rev} is not a commit of {source}: {listed.stderr.strip()}")
    shas = listed.stdout.split()
    if len(shas) < count:
        raise DistkpiError(
            f"{rev} has {len(shas)} commit(s) on its first-parent line; --commits {count} needs "
            f"{count}"
        )
    return list(reversed(shas))


def _base_of(source: Path, sha: str) -> str:
    """The commit a pull request of ``sha`` is based on: its first parent (itself at a root)."""
    parent = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--verify", "--quiet", f"{sha}^"],
        capture_output=True,
        text=True,
        check=False,
    )
    return parent.stdout.strip() or sha


def run_local(
    suite: Path,
    out: Path,
    rev: str = "HEAD",
    *,
    source: Path | None = None,
    commits: int = 1,
    repo: str = "local/demo",
    faults: dict[tuple[str, int], int] | None = None,
    progress: TextIO = sys.stderr,
    github_app: bool = False,
    pull_request: bool = False,
    state: StateFolder | None = None,
    fresh: bool = False,
    keep_work: bool = False,
    push_from: str | None = None,
    port: int = 0,
) -> LocalResult:
    """``commits`` merges on one stack, measuring the code of ``source`` (a git repository,
    default this checkout) at ``rev`` and its first-parent predecessors, oldest first: each
    is pushed to develop and judged against develop's earlier runs, except that with
    ``pull_request`` ``rev`` comes as a pull request onto its parent. With ``push_from``,
    ``rev`` is pushed as one push whose `before` is that commit (the commits between come
    in one push). A bisection a push's regression starts runs to its end. With a ``state``
    folder the history goes on from the runs before, and is kept for the next. Each run's
    node work dirs are removed when its jobs end, unless ``keep_work`` or a node failed.
    ``port``: moto's (GitHub's the next), else free ones."""
    source = source or project_root()
    if push_from is not None and (commits != 1 or pull_request):
        raise DistkpiError("--push-from pushes one commit: not with --commits or --pull-request")
    chain = commits_of(source, rev, commits)
    pushed_from = commits_of(source, push_from, 1)[0] if push_from else None
    opened = local_stack(
        suite,
        progress,
        github_app=github_app,
        state=state,
        fresh=fresh,
        repository=source,
        port=port,
    )
    with opened as stack:
        stack.say(
            f"local stack up: AWS (moto) at {stack.aws.endpoint}, GitHub at {stack.github.url}"
            + (" (as a GitHub App)" if github_app else "")
        )
        dispatch = Dispatcher(stack, out, source, keep_work=keep_work)
        runs: list[RunRecord] = []
        jobs: list[JobOutcome] = []
        base = pushed_from or _base_of(source, chain[0])
        for pushed in chain[:-1]:
            runs += _run_commit(stack, dispatch, repo, pushed, base, push=True, jobs=jobs)
            base = pushed
        last = chain[-1]
        runs += _run_commit(
            stack, dispatch, repo, last, base, push=not pull_request, jobs=jobs, faults=faults or {}
        )
        # a bisection any push started runs to its end here, so none is left running in the
        # state folder with no one to run its steps
        bisections = _bisect(stack, dispatch, repo, runs, jobs)
        results = [_result(dispatch, run) for run in runs]
        stack.say(f"done: {len(jobs)} job(s), {stack.events_delivered} S3 event(s) delivered")
        return LocalResult(
            list(stack.github.statuses),
            results,
            jobs,
            stack.events_delivered,
            time.monotonic() - stack.started,
            checks_of(stack.github) if github_app else None,
            bisections if bisections or push_from else None,
            list(stack.github.comments),
            list(stack.chat.messages) if stack.chat is not None else [],
        )


def _bisect(
    stack: LocalStack,
    dispatch: Dispatcher,
    repo: str,
    runs: list[RunRecord],
    jobs: list[JobOutcome],
) -> list[dict[str, Any]]:
    """Run each step the pushes' bisections start, until none is left running (the
    collector starts the next step as each finishes); their summaries."""
    bisections = BisectionRepository(DynamoTable(TABLE))
    ids = {r.first_run_id for r in runs}

    def current() -> list[Bisection]:
        models = sorted({r.model for r in runs})
        found = [b for m in models for b in bisections.of_branch(repo, "develop", m)]
        return [b for b in found if b.bad_run_id in ids]

    while steps := [
        b.steps[-1].run_id
        for b in current()
        if b.state is BisectState.RUNNING and b.steps and b.steps[-1].side is None
    ]:
        for run_id in steps:
            step = dispatch.run(run_id)
            stack.say(f"bisection: step {run_id} at {step.trigger.sha[:10]}")
        jobs += dispatch.run_jobs(steps, {})
        dispatch.wait_settled(steps)
    ended = current()
    for b in ended:
        culprit = b.culprit[:10] if b.culprit else "none"
        stack.say(f"bisection of {b.bad_run_id}: {b.state.value}, culprit {culprit} - {b.why}")
    return [b.summary() for b in ended]


def checks_of(github: GitHubStandIn | RemoteStandIn) -> list[dict[str, Any]]:
    """Each check run GitHub holds, as it stands: name, status, conclusion, title, summary."""
    return [
        {
            "name": c["name"],
            "status": c.get("status"),
            "conclusion": c.get("conclusion"),
            "title": c.get("output", {}).get("title"),
            "summary": c.get("output", {}).get("summary"),
        }
        for c in github.checks
    ]


def dry_run(
    suite: Path,
    rev: str = "HEAD",
    *,
    source: Path | None = None,
    repo: str = "local/demo",
    progress: TextIO = sys.stderr,
    state: StateFolder | None = None,
) -> dict[str, Any]:
    """What a pull request of ``rev`` would start, without running it: each run with the
    exact SubmitJob request of each job, the GPUs they ask for, the GPU-hours its last
    runs on the base branch took (the median of up to 5; None without any), and the
    statuses posted. A ``state`` folder is read (for the estimate), never written."""
    source = source or project_root()
    (sha,) = commits_of(source, rev, 1)
    with local_stack(suite, progress, state=state, save=False, repository=source) as stack:
        dispatch = Dispatcher(stack, Path(), source)
        run_ids = stack.send_webhook(repo, sha, _base_of(source, sha))
        runs = [planned_run(dispatch, run_id) for run_id in run_ids]
        statuses = [
            {k: s[k] for k in ("context", "state", "description", "target_url")}
            for s in stack.github.statuses
        ]
        return {"runs": runs, "statuses": statuses}


def planned_run(dispatch: Dispatcher, run_id: str) -> dict[str, Any]:
    """A run as --dry-run --json prints it: the exact SubmitJob request of each job, the
    GPUs they ask for, and the GPU-hours the last runs on its base branch took (the median
    of up to 5; None without any)."""
    run = dispatch.run(run_id)
    requests = dispatch.requests(run_id)
    history = HistoryRepository(DynamoTable(TABLE))
    recent = history.history(run.trigger.repo, run.baseline_branch, run.model, limit=RECENT_ROWS)
    estimate, of_runs = recent_gpu_hours(recent)
    return {
        "run_id": run_id,
        "model": run.model,
        "sha": run.trigger.sha,
        "jobs": requests,
        "gpus_by_job": {r["jobName"]: gpus_requested(r) for r in requests},
        "gpus": sum(gpus_requested(r) for r in requests),
        "gpu_hours_estimate": estimate,
        "gpu_hours_estimate_runs": of_runs,
    }


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


def print_notices(result: LocalResult, out: TextIO) -> None:
    """Each pull request comment as it stands (its headline), each chat message's text."""
    for comment in result.comments:
        head = comment["body"].splitlines()[1] if "\n" in comment["body"] else ""
        print(
            f"pull request #{comment['number']} comment {comment['id']} "
            f"(edited {comment['edits']} time(s)): {head}",
            file=out,
        )
    for message in result.chat:
        print(f"chat: {message.get('text', '')}", file=out)


def print_result(result: LocalResult, out: TextIO = sys.stdout) -> None:
    """The earlier runs in a line each, then the last run's table, judgements and verdict,
    where its files are, and every status GitHub received."""
    from distkpi.domain.judging.table import render_judgements, render_table

    if not result.runs:  # the webhook started nothing: the statuses say why
        print("no run started; statuses GitHub received:", file=out)
        for status in result.statuses:
            print(
                f"  {status['context']:16s} {status['state']:8s} {status['description']}", file=out
            )
        return
    for run in result.runs[:-1]:
        print(f"{run.event:12s} {run.run_id}: {run.state} - {run.description}", file=out)
    last = result.runs[-1]
    print(render_table(last.kpis, last.target_accuracy), file=out)
    if any(j.baseline is not None for j in last.judgements):
        print("\nagainst the baseline (develop):", file=out)
        print(render_judgements(last.judgements), file=out)
    else:
        print(
            "\nno baseline yet: develop has no history before this run (the next run is "
            "judged against it; --commits 3 builds one at once)",
            file=out,
        )
    print(f"\nverdict: {last.state} - {last.description}", file=out)
    print(f"logs and KPIs: {last.folder}  (distkpi kpis {last.folder})", file=out)
    print(f"report: {last.report}\n", file=out)
    for b in result.bisections or []:
        culprit = b["culprit"] or "none"
        print(
            f"bisection of {b['good'][:10]}...{b['bad'][:10]} ({b['commits']} commits, "
            f"{', '.join(b['configs'])}): {b['state']}, culprit {culprit} - {b['why']}",
            file=out,
        )
        for number, step in enumerate(b["steps"], 1):
            print(
                f"  step {number}: {step['sha'][:10]} {step['side'] or 'running':8s} "
                f"{step['run_id']}",
                file=out,
            )
        print(f"  {b['gpu_hours']:.3g} GPU-hours\n", file=out)
    print_notices(result, out)
    if result.checks is not None:
        print("check runs GitHub holds:", file=out)
        for check in result.checks:
            print(
                f"  {check['name']:16s} {check['status']:10s} {check['conclusion'] or '-':8s} "
                f"{check['title']}",
                file=out,
            )
        return
    print("statuses GitHub received:", file=out)
    for status in result.statuses:
        print(
            f"  {status['sha'][:10]}  {status['context']:16s} {status['state']:8s} "
            f"{status['description']}",
            file=out,
        )
