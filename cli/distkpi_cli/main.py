"""The `distkpi` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distkpi.exceptions import ContractError, DistkpiError, RunFolderError
from distkpi_cli.history_files import FORMATS

DEFAULT_STATE = Path("out/local/state")  # distkpi local's state folder (local/state.py)

if TYPE_CHECKING:
    from distkpi.adapters.dynamo import DynamoTable
    from distkpi.domain.contracts import RunSpec
    from distkpi.domain.kpis.engine import ConfigKpis
    from distkpi.domain.records import RunRecord

FAILURE = 1
USAGE_ERROR = 2


class UsageError(DistkpiError):
    """The command line names nothing usable (no table given or set, no such run)."""


Command = Callable[[argparse.Namespace], int]


def _cmd_kpis(args: argparse.Namespace) -> int:
    from distkpi.domain.judging.table import render_table
    from distkpi.domain.kpis.runfolder import compute_run_kpis, read_run_spec
    from distkpi_cli.localfs import LocalRunSource

    source = LocalRunSource(Path(args.run_dir))
    run = compute_run_kpis(source, args.target_accuracy, args.accuracy_pass)
    if args.json:
        print(json.dumps(run.to_json(), indent=2))
    else:
        target = args.target_accuracy
        if target is None:
            target = read_run_spec(source).target_accuracy
        print(render_table(run, target))
    return 0


def _add_kpis(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("kpis", help="compute the KPIs of a run folder")
    p.add_argument("run_dir", help="a run folder: run.json and <config>/node-<i>.json")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--target-accuracy", type=float, help="override run.json's target")
    p.add_argument("--accuracy-pass", type=int, help="override run.json's accuracy pass")
    p.set_defaults(func=_cmd_kpis)


def _fault(text: str) -> tuple[str, int, int]:
    config, node, epoch = text.rsplit(":", 2)
    return config, int(node), int(epoch)


def _cmd_local(args: argparse.Namespace) -> int:
    from distkpi_cli.local.demo import dry_run, print_result, run_local
    from distkpi_cli.local.state import StateFolder

    source = Path(args.repo) if args.repo else None
    state = StateFolder(Path(args.state))
    if args.action == "up":
        from distkpi_cli.local.up import serve

        return serve(Path(args.suite), state, args.port, fresh=args.fresh)
    if args.event:
        return _replay(args, source)
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
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print_result(result)
    return 0 if result.ok else FAILURE


def _replay(args: argparse.Namespace, source: Path | None) -> int:
    from distkpi_cli.local.replay import read_events, replay

    events = read_events([Path(f) for f in args.event], args.event_name or [])
    result = replay(Path(args.suite), Path(args.out), events, dry_run=args.dry_run, source=source)
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


def _add_local(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("local", help="the whole pipeline on this machine, with real training")
    p.add_argument(
        "action",
        nargs="?",
        choices=["up"],
        help="up: keep the local stack running (until Ctrl-C) for the other commands",
    )
    p.add_argument("--suite", default="infra/suites/local.yaml", help="suite file to run")
    p.add_argument(
        "--state",
        default=str(DEFAULT_STATE),
        help="folder the local AWS state (history, runs, reports) is kept in between runs",
    )
    p.add_argument(
        "--fresh", action="store_true", help="start from empty state (deletes the --state folder)"
    )
    p.add_argument("--port", type=int, default=4566, help="with up: moto's port (GitHub: next)")
    p.add_argument(
        "--pull-request",
        action="store_true",
        help="the last commit comes as a pull request onto its parent (else it is pushed)",
    )
    p.add_argument("--repo", help="git repository whose code is measured (default: this one)")
    p.add_argument("--sha", default="HEAD", help="commit (any git revision) to measure")
    p.add_argument(
        "--dry-run", action="store_true", help="stop after the webhook: what would be submitted"
    )
    p.add_argument("--json", action="store_true", help="print statuses and runs as JSON")
    p.add_argument(
        "--github-app",
        action="store_true",
        help="sign in to GitHub as an App: check runs with the KPI table (JSON adds `checks`)",
    )
    p.add_argument("--out", default="out/local", help="where run folders and job logs go")
    p.add_argument(
        "--commits",
        type=int,
        default=1,
        help="N merges: --sha and the N-1 commits before it (first parent) are pushed to "
        "develop, oldest first, each judged against the runs before it",
    )
    p.add_argument(
        "--event",
        action="append",
        metavar="FILE",
        help="replay this recorded delivery (headers and payload, or a bare payload), signed "
        "with the local secret; repeat for a sequence",
    )
    p.add_argument(
        "--event-name",
        action="append",
        metavar="NAME",
        help="the event of every --event (once), or of the n-th (once per --event); default: "
        "the file's X-GitHub-Event header",
    )
    p.add_argument(
        "--fail",
        type=_fault,
        action="append",
        metavar="CONFIG:NODE:EPOCH",
        help="make that node's training crash after that epoch (to see an error verdict)",
    )
    p.set_defaults(func=_cmd_local)


def _commit_runs(run_dirs: Sequence[str]) -> tuple[RunSpec, list[dict[str, ConfigKpis]]]:
    """Run folders of one commit: a spec with every config they hold (the first's first),
    and each folder's configs. UsageError when they are of different commits or models."""
    from distkpi.domain.kpis.runfolder import compute_run_kpis, read_run_spec
    from distkpi_cli.localfs import LocalRunSource

    specs, runs = [], []
    for run_dir in run_dirs:
        source = LocalRunSource(Path(run_dir))
        specs.append(read_run_spec(source))
        runs.append({c.name: c for c in compute_run_kpis(source).configs})
    first = specs[0]
    for attribute in ("repo", "sha", "model"):
        if len({getattr(s, attribute) for s in specs}) > 1:
            named = ", ".join(
                f"{d} is {getattr(s, attribute)}" for s, d in zip(specs, run_dirs, strict=True)
            )
            raise UsageError(f"run folders of different {attribute}s: {named}")
    configs = {c.name: c for s in specs for c in s.configs}
    return first.model_copy(update={"configs": tuple(configs.values())}), runs


def _cmd_judge(args: argparse.Namespace) -> int:
    from distkpi.domain.judging.evaluation import evaluate
    from distkpi.domain.judging.settings import VerdictSettings
    from distkpi.domain.judging.table import render_judgements
    from distkpi.domain.kpis.combining import combine
    from distkpi.domain.planning.suites import load_suite
    from distkpi.services.baseline import latest_resets
    from distkpi_cli.history_files import read_history_csv, read_resets_csv

    spec, runs = _commit_runs(args.run_dirs)
    history = read_history_csv(Path(args.history))
    resets = latest_resets(read_resets_csv(Path(args.resets))) if args.resets else {}
    settings = load_suite(Path(args.suite)).verdict if args.suite else VerdictSettings()
    evaluation = evaluate(
        combine(spec, runs), history, settings, spec.accuracy_tolerance, resets, look=len(runs)
    )
    if args.json:
        print(json.dumps([j.to_json() for j in evaluation.judgements], indent=2))
        return 0
    print(render_judgements(evaluation.judgements))
    print(f"\n{evaluation.verdict.state.value}: {evaluation.description}")
    return 0


def _add_judge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "judge",
        help="judge run folders of one commit together against a history file, as the "
        "collector does",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders of one commit")
    p.add_argument("--history", required=True, help="CSV as `distkpi history --format csv` writes")
    p.add_argument("--suite", help="suite whose `verdict:` settings apply (default: all enforced)")
    p.add_argument(
        "--resets",
        help="CSV as `distkpi baseline resets --format csv` writes: the history before each "
        "config's latest reset does not count, as in the collector",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_judge)


@contextmanager
def _table(args: argparse.Namespace, write: bool = False) -> Iterator[DynamoTable]:
    """The deployed table (--table), or with --local the local stack's or state folder's."""
    import os

    import boto3

    from distkpi.adapters.aws import CLIENT_CONFIG
    from distkpi.adapters.dynamo import DynamoTable

    if args.local:
        from distkpi_cli.local.attach import local_table
        from distkpi_cli.local.state import StateFolder

        with local_table(StateFolder(Path(args.state)), write=write) as table:
            yield table
        return
    name = args.table or os.environ.get("TABLE_NAME")
    if not name:
        raise UsageError(
            "no table: give --table or set TABLE_NAME (the stack's RunsTableName), or --local"
        )
    resource = boto3.resource("dynamodb", endpoint_url=args.endpoint_url, config=CLIENT_CONFIG)
    yield DynamoTable(name, resource.Table(name))


def _cmd_history(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi.domain.history_rows import rows_from_records
    from distkpi_cli.history_files import write_history

    with _table(args) as table:
        records = HistoryRepository(table).history(
            args.repo, args.branch, args.model, since=args.since
        )
        rows = [
            r
            for r in rows_from_records(records)
            if (args.config is None or r.config == args.config)
            and (args.kpi is None or r.kpi == args.kpi)
        ]
    if args.limit is not None:
        runs = sorted({r.run_id: r.finished_at for r in rows}.items(), key=lambda x: x[1])
        keep = {run for run, _ in runs[-args.limit :]}
        rows = [r for r in rows if r.run_id in keep]
    write_history(rows, args.format, path=Path(args.out) if args.out else None)
    return 0


def _cmd_reset(args: argparse.Namespace) -> int:
    import getpass
    from datetime import UTC, datetime

    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi.domain.records import ResetRecord

    at = datetime.now(UTC).isoformat(timespec="seconds")
    who = args.who or getpass.getuser()
    reset = ResetRecord(args.repo, args.branch, args.model, args.config, args.reason, who, at)
    with _table(args, write=True) as table:
        HistoryRepository(table).record_reset(reset)
    print(
        f"baseline of {args.repo} {args.branch} {args.model} {args.config} reset at {at} by {who}"
    )
    return 0


def _cmd_resets(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi_cli.history_files import write_resets

    with _table(args) as table:
        resets = HistoryRepository(table).resets(args.repo, args.branch, args.model)
    write_resets(resets, args.format)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository, RunRepository
    from distkpi.reporting.page import build_report
    from distkpi.services.baseline import baseline_of

    with _table(args) as table:
        run = RunRepository(table).get(args.run_id)
        if run is None or run.evaluation is None:
            raise UsageError(f"no finished run {args.run_id} in {table.table_name}")
        files = build_report(run, baseline_of(HistoryRepository(table), run).rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    print(out / "index.html")
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import RunRepository

    with _table(args) as table:
        runs = RunRepository(table).of_commit(args.repo, args.sha)
    if args.json:
        print(json.dumps([_run_summary(r) for r in runs], indent=2))
        return 0
    if not runs:
        print(f"no runs of {args.repo}@{args.sha[:10]}")
    for summary in map(_run_summary, runs):
        print(
            f"{summary['created_at']}  {summary['run_id']:40s} {summary['status']:8s} "
            f"{summary['state'] or '-':8s} {summary['description'] or ''}"
        )
    return 0


def _run_summary(run: RunRecord) -> dict[str, object]:
    evaluation = run.evaluation
    return {
        "run_id": run.run_id,
        "model": run.model,
        "event": run.trigger.event,
        "created_at": run.created_at,
        "status": run.status.value,
        "state": evaluation.verdict.state.value if evaluation else None,
        "description": evaluation.description if evaluation else run.cancelled_reason,
    }


def _table_options(p: argparse.ArgumentParser, *, suite: bool = True) -> None:
    if suite:
        p.add_argument("--repo", required=True, help="owner/name")
        p.add_argument("--model", required=True, help="suite name")
        p.add_argument("--branch", default="develop")
    p.add_argument("--table", help="DynamoDB table (default: $TABLE_NAME)")
    p.add_argument("--endpoint-url", help="AWS endpoint, e.g. a local moto server")
    p.add_argument(
        "--local",
        action="store_true",
        help="the running `distkpi local up`, or else the local state folder",
    )
    p.add_argument("--state", default=str(DEFAULT_STATE), help="with --local: the state folder")


def _cmd_site(args: argparse.Namespace) -> int:
    from distkpi.adapters.dynamo import HistoryRepository
    from distkpi.reporting.site import FolderSite, build_site

    out = Path(args.out)
    with _table(args) as table:
        built = build_site(
            HistoryRepository(table),
            FolderSite(out),
            repo=args.repo,
            model=args.model,
            branch=args.branch,
            report_url=args.report_url,
            page_runs=args.page_runs,
        )
    print(
        f"{out / 'index.html'}: {built.histories} histories, {built.runs} runs, "
        f"{built.pages} page(s)"
    )
    return 0


def _add_history(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("history", help="KPI history of a (repo, branch, model)")
    _table_options(p)
    p.add_argument("--config")
    p.add_argument("--kpi")
    p.add_argument("--since", help="ISO date or time: only runs created since then")
    p.add_argument("--limit", type=int, help="only the newest N runs")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--out", help="file to write (needed for parquet)")
    p.set_defaults(func=_cmd_history)
    b = sub.add_parser("baseline", help="manage baselines").add_subparsers(
        dest="action", required=True
    )
    r = b.add_parser("reset", help="start a config's baseline afresh after an intended change")
    _table_options(r)
    r.add_argument("--config", required=True, help="config name, or * for all")
    r.add_argument("--reason", required=True, help="why: kept with the reset for audit")
    r.add_argument("--who", help="who resets (default: the current user)")
    r.set_defaults(func=_cmd_reset)
    listed = b.add_parser("resets", help="the audited resets of a (repo, branch, model)")
    _table_options(listed)
    listed.add_argument("--format", choices=("table", "csv", "json"), default="table")
    listed.set_defaults(func=_cmd_resets)
    rep = sub.add_parser("report", help="write a finished run's report (HTML and PNGs) locally")
    rep.add_argument("run_id")
    rep.add_argument("--out", required=True, help="folder to write index.html and the charts to")
    _table_options(rep, suite=False)
    rep.set_defaults(func=_cmd_report)
    commit = sub.add_parser("runs", help="the runs of one commit, with their verdicts")
    commit.add_argument("--repo", required=True, help="owner/name")
    commit.add_argument("--sha", required=True)
    commit.add_argument("--json", action="store_true")
    _table_options(commit, suite=False)
    commit.set_defaults(func=_cmd_runs)
    site = sub.add_parser("site", help="write the KPI history as static pages to browse")
    site.add_argument("--out", required=True, help="folder to write index.html and pages to")
    site.add_argument("--repo", help="only this repository's histories (owner/name)")
    site.add_argument("--model", help="only this suite's")
    site.add_argument("--branch", help="only this branch's")
    site.add_argument(
        "--report-url",
        default="../reports/{run_id}/index.html",
        help="where a point links, {run_id} filled in (default: the reports beside the site)",
    )
    site.add_argument("--page-runs", type=int, default=500, help="runs per page of a history")
    _table_options(site, suite=False)
    site.set_defaults(func=_cmd_site)


def _cmd_node(args: argparse.Namespace) -> int:
    from distkpi_cli.node.runner import main as run_node

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    return run_node(command)


def _add_node(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "node",
        help="run this node of a benchmark job (the job image's entrypoint)",
        description="Check out the commit under test, run the suite's setup, meet the other "
        "nodes, run the command with the frameworks' variables, upload its logs and the node "
        "manifest. The command comes from the suite (DISTKPI_COMMAND) unless given after --.",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND... (optional)")
    p.set_defaults(func=_cmd_node)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distkpi", description="KPIs of distributed training runs"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_kpis(sub)
    _add_local(sub)
    _add_node(sub)
    _add_judge(sub)
    _add_history(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except (UsageError, RunFolderError, ContractError) as exc:  # unusable arguments or inputs
        print(f"distkpi {args.command}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except DistkpiError as exc:
        print(f"distkpi {args.command}: {exc}", file=sys.stderr)
        return FAILURE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
