"""`distkpi local`: the whole pipeline on this machine, with real training."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distkpi_cli.commands.argtypes import fault, positive_int
from distkpi_cli.commands.calibrate import drop_share, jobs_count
from distkpi_cli.commands.common import DEFAULT_STATE, FAILURE, Subcommands

if TYPE_CHECKING:
    from distkpi_cli.local.state import StateFolder

DEFAULT_SUITE = "infra/suites/local.yaml"
CALIBRATED_SUITE = "infra/suites/local-paired.yaml"  # what `distkpi local calibrate` runs


def _check(args: argparse.Namespace, source: Path | None) -> None:
    """The suite as given and the commits, before any stack starts: ContractError or
    UsageError naming them (exit 2). The webhook would only post a status naming the
    suite's bucket key, cut at GitHub's 140 characters."""
    from distkpi.domain.planning.suites import load_suite
    from distkpi_cli.local.handlers import project_root
    from distkpi_cli.revisions import commit_of

    load_suite(Path(args.suite))
    if args.action == "up" or args.event:
        return
    repository = source or project_root()
    commit_of(args.sha, repository)
    if args.push_from:
        commit_of(args.push_from, repository, "--push-from")


def run(args: argparse.Namespace) -> int:
    from distkpi_cli.local.demo import dry_run, print_result, run_local
    from distkpi_cli.local.state import StateFolder

    # absolute: the nodes clone it from folders of their own
    source = Path(args.repo).resolve() if args.repo else None
    state = StateFolder(Path(args.state))
    default = CALIBRATED_SUITE if args.action == "calibrate" else DEFAULT_SUITE
    args.suite = args.suite or default
    _check(args, source)
    if args.action == "calibrate":
        return _calibrate(args, source, state)
    if args.action == "up":
        from distkpi_cli.local.up import serve

        return serve(Path(args.suite), state, args.port, fresh=args.fresh, repository=source)
    if args.event:
        return _replay(args, source, state if state.path.exists() else None)
    if args.dry_run:
        planned = dry_run(Path(args.suite), args.sha, source=source, state=state)
        print(json.dumps(planned, indent=2) if args.json else _describe_plan(planned))
        return 0
    faults = {(c, n): e for c, n, e in args.fail or []}
    result = run_local(
        Path(args.suite),
        Path(args.out),
        args.sha,
        source=source,
        commits=args.commits,
        faults=faults,
        github_app=args.github_app,
        pull_request=args.pull_request,
        state=state,
        fresh=args.fresh,
        keep_work=args.keep_work,
        push_from=args.push_from,
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print_result(result)
    return 0 if result.ok else FAILURE


def _calibrate(args: argparse.Namespace, source: Path | None, state: StateFolder) -> int:
    from distkpi_cli.calibration_report import render
    from distkpi_cli.local.calibrate import calibrate_local

    report = calibrate_local(
        Path(args.suite),
        Path(args.out),
        args.sha,
        jobs=args.jobs,
        drop=args.drop,
        source=source,
        state=state,
        fresh=args.fresh,
    )
    print(json.dumps(report.calibration.to_json(), indent=2) if args.json else render(report))
    return 0


def _replay(args: argparse.Namespace, source: Path | None, state: StateFolder | None) -> int:
    from distkpi_cli.local.replay import read_events, replay

    events = read_events([Path(f) for f in args.event], args.event_name or [])
    result = replay(
        Path(args.suite),
        Path(args.out),
        events,
        dry_run=args.dry_run,
        source=source,
        keep_work=args.keep_work,
        state=state,
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for d in result["deliveries"]:
            print(f"{d['event']}: {d['status_code']} {d['body'].get('message', '')}")
        for run in result["runs"]:
            print(
                f"run {run['run_id']}: {run.get('state', 'planned')} {run.get('description', '')}"
            )
        for status in result["statuses"]:
            print(f"status {status['context']} {status['state']}: {status['description']}")
    return FAILURE if any(r.get("state") == "error" for r in result["runs"]) else 0


def _describe_plan(planned: dict[str, Any]) -> str:
    lines = []
    for run in planned["runs"]:
        lines.append(f"run {run['run_id']}  model {run['model']}  sha {run['sha']}")
        for job in run["jobs"]:
            nodes = job.get("nodeOverrides", {}).get("numNodes", 1)
            gpus = run["gpus_by_job"][job["jobName"]]
            lines.append(
                f"  {job['jobName']}: {nodes} node(s), {gpus} GPU(s), {job['jobDefinition']}"
            )
        estimate = run["gpu_hours_estimate"]
        cost = (
            f"about {estimate:.3g} GPU-hours (median of the base branch's last "
            f"{run['gpu_hours_estimate_runs']} run(s))"
            if estimate is not None
            else "no estimate of GPU-hours: the base branch has no runs that know theirs"
        )
        lines.append(f"  {run['gpus']} GPUs in all; {cost}")
    for status in planned["statuses"]:
        lines.append(f"status {status['context']} {status['state']}: {status['description']}")
    return "\n".join(lines)


def add(sub: Subcommands) -> None:
    summary = "the whole pipeline on this machine, with real training"
    p = sub.add_parser(
        "local",
        help=summary,
        description=f"{summary}: push --sha to develop on a local stack (moto for AWS, a "
        "GitHub stand-in), run its jobs as local processes and print the verdict. Exit 0 on a "
        "success or failure verdict, 1 on error, 2 on unusable input.",
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=["up", "calibrate"],
        help="up: keep the local stack running (until Ctrl-C) for the other commands; "
        "calibrate: --jobs A/A jobs of the suite through the webhook, then their calibration",
    )
    p.add_argument(
        "--suite",
        help=f"suite file to run (default {DEFAULT_SUITE}; calibrate: {CALIBRATED_SUITE})",
    )
    p.add_argument(
        "--state",
        default=str(DEFAULT_STATE),
        help="folder the local AWS state (history, runs, reports) is kept in between runs "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--fresh", action="store_true", help="start from empty state (deletes the --state folder)"
    )
    p.add_argument(
        "--port",
        type=int,
        default=4566,
        help="with up: moto's port, GitHub's the next (default: %(default)s)",
    )
    p.add_argument(
        "--pull-request",
        action="store_true",
        help="the last commit comes as a pull request onto its parent (else it is pushed)",
    )
    p.add_argument("--repo", help="git repository whose code is measured (default: this one)")
    p.add_argument(
        "--sha",
        default="HEAD",
        metavar="REV",
        help="commit to measure: any git revision or unique sha prefix (default: %(default)s)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="stop after the webhook: what would be submitted"
    )
    p.add_argument("--json", action="store_true", help="print statuses and runs as JSON")
    p.add_argument(
        "--github-app",
        action="store_true",
        help="sign in to GitHub as an App: check runs with the KPI table (JSON adds `checks`)",
    )
    p.add_argument(
        "--out",
        default="out/local",
        help="where run folders and job logs go (default: %(default)s)",
    )
    p.add_argument(
        "--keep-work",
        action="store_true",
        help="keep each node's work dir (a checkout) under --out/work when its run ends; they "
        "are kept anyway when a node failed",
    )
    p.add_argument(
        "--commits",
        type=positive_int,
        default=1,
        metavar="N",
        help="N merges: --sha and the N-1 commits before it (first parent) are pushed to "
        "develop, oldest first, each judged against the runs before it (default: %(default)s)",
    )
    p.add_argument(
        "--push-from",
        metavar="BASE",
        help="push --sha to develop as one push whose `before` is BASE (the commits between "
        "come in one push); a regression bisects them, its steps run here (JSON adds "
        "`bisections`)",
    )
    p.add_argument(
        "--event",
        action="append",
        metavar="FILE",
        help="replay this recorded delivery (headers and payload, or a bare payload), signed "
        "with the local secret, on the state folder's stack when there is one (a "
        "`/distkpi accept` comment finds the run it accepts); repeat for a sequence. "
        "`--event schedule`: the stack's schedule instead (the default branch's head, the "
        "configs whose `when:` names schedule)",
    )
    p.add_argument(
        "--event-name",
        action="append",
        metavar="NAME",
        help="the event of every --event (once), or of the n-th (once per --event); default: "
        "the file's X-GitHub-Event header",
    )
    p.add_argument(
        "--jobs",
        type=jobs_count,
        default=3,
        help="calibrate: how many A/A jobs (default: %(default)s)",
    )
    p.add_argument(
        "--drop",
        type=drop_share,
        default=0.25,
        help="calibrate: the throughput drop the designs are ranked by (default: %(default)s)",
    )
    p.add_argument(
        "--fail",
        type=fault,
        action="append",
        metavar="CONFIG:NODE:EPOCH",
        help="make that node's training crash after that epoch (to see an error verdict)",
    )
    p.set_defaults(func=run)
