"""In-memory ports (services/ports.py) for the service tests: the same contract as the
adapters, each state change conditional as DynamoDB makes it, under one lock, so the
services' logic runs without moto. What only AWS can show (conditions under real
concurrency, IAM as deployed, real event shapes) stays in tests/integration."""

from __future__ import annotations

import hashlib
import io
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from distkpi.domain.bisect.plan import Bisection
from distkpi.domain.commit_status import CommitStatus
from distkpi.domain.github.acceptance import Acceptance
from distkpi.domain.github.alerts import AlarmState
from distkpi.domain.github.commits import Comparison
from distkpi.domain.github.deliveries import Once
from distkpi.domain.github.pr_comment import KeptComment
from distkpi.domain.layout import run_prefix
from distkpi.domain.planning.suites import BrokenSuite, Suite, parse_deployed_suites
from distkpi.domain.records import (
    ConfigRecord,
    ConfigState,
    FoundJob,
    HistoryRecord,
    JobRecord,
    PullRequestRun,
    ResetRecord,
    RunRecord,
    RunStatus,
    SeriesRecord,
    is_published,
)
from distkpi.domain.regressions import Regression
from distkpi.exceptions import (
    ChatError,
    GitHubError,
    GitHubNotFoundError,
    GitHubWriteSkipped,
    LaunchError,
    NotFoundError,
)

if TYPE_CHECKING:
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.judging.history import HistoryRow
    from distkpi.domain.kpis.engine import ConfigKpis
    from distkpi.domain.planning.jobs import JobPlan

ROOT = Path(__file__).resolve().parents[1]
SEED_SUITE = ROOT / "infra" / "suites" / "resnet50.yaml"


def seed_suite_with_when(when: Mapping[str, str]) -> str:
    """The seed's suite text, some configs given a `when:` (flow style, as YAML has it)."""
    lines = []
    for line in SEED_SUITE.read_text().splitlines():
        changed = line
        for name, value in when.items():
            if line.startswith(f"  - {{name: {name},"):
                changed = line.replace("}", f", when: {value}}}")
        lines.append(changed)
    return "\n".join(lines)


class FakeRuns:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._runs: dict[str, RunRecord] = {}
        self._configs: dict[str, dict[str, ConfigRecord]] = {}
        self._check_runs: dict[str, int] = {}
        self._leases: dict[str, int] = {}

    def create(self, run: RunRecord, configs: Mapping[str, int]) -> bool:
        with self._lock:
            if run.run_id in self._runs:
                return False
            self._runs[run.run_id] = run
            self._configs[run.run_id] = {
                name: ConfigRecord(
                    run_id=run.run_id,
                    name=name,
                    nodes_expected=nodes,
                    state=ConfigState.PENDING,
                )
                for name, nodes in configs.items()
            }
            return True

    def get(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    def configs(self, run_id: str) -> list[ConfigRecord]:
        return sorted(self._configs.get(run_id, {}).values(), key=lambda c: c.name)

    def config(self, run_id: str, name: str) -> ConfigRecord | None:
        return self._configs.get(run_id, {}).get(name)

    def _update_config(self, run_id: str, name: str, **changes: Any) -> ConfigRecord:
        record = self.config(run_id, name)
        if record is None:
            raise NotFoundError(f"no config {run_id} {name}")
        updated = replace(record, **changes)
        self._configs[run_id][name] = updated
        return updated

    def set_job(self, run_id: str, config: str, job_id: str) -> None:
        with self._lock:
            self._update_config(run_id, config, job_id=job_id)

    def add_node(self, run_id: str, config: str, node: int) -> ConfigRecord:
        with self._lock:
            record = self.config(run_id, config)
            if record is None or not 0 <= node < record.nodes_expected:
                raise NotFoundError(f"no node {node} of {run_id} {config}")
            return self._update_config(
                run_id, config, nodes_reported=record.nodes_reported | {node}
            )

    def settle_config(self, run_id: str, kpis: ConfigKpis) -> bool:
        with self._lock:
            record = self.config(run_id, kpis.name)
            if record is None or record.state is not ConfigState.PENDING:
                return False
            self._update_config(
                run_id, kpis.name, state=ConfigState.settled_as(kpis.status), kpis=kpis
            )
            return True

    def record_look(
        self, run_id: str, config: str, pair: int, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        with self._lock:
            record = self.config(run_id, config)
            if record is None:
                raise NotFoundError(f"no config {config} of run {run_id}")
            if pair not in record.looks:
                self._update_config(run_id, config, looks={**record.looks, pair: dict(decision)})
            return self._configs[run_id][config].looks[pair]

    def add_look_arrival(self, run_id: str, config: str, pair: int, node: int) -> ConfigRecord:
        with self._lock:
            record = self.config(run_id, config)
            if record is None or not 0 <= node < record.nodes_expected:
                raise NotFoundError(f"no node {node} of {run_id} {config}")
            arrived = record.look_arrivals.get(pair, frozenset()) | {node}
            return self._update_config(
                run_id, config, look_arrivals={**record.look_arrivals, pair: arrived}
            )

    def add_config_done(self, run_id: str, config: str) -> tuple[int, int]:
        with self._lock:
            run = self._run(run_id)
            done = run.configs_done | {config}
            self._runs[run_id] = replace(run, configs_done=done)
            return len(done), run.configs_total

    def _run(self, run_id: str) -> RunRecord:
        run = self._runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id}")
        return run

    def _change_run(self, run_id: str, allowed: Iterable[RunStatus], **changes: Any) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status not in set(allowed):
                return False
            self._runs[run_id] = replace(run, **changes)
            return True

    def finish(self, run_id: str, evaluation: Evaluation, finished_at: str) -> bool:
        return self._change_run(
            run_id,
            [RunStatus.RUNNING],
            status=RunStatus.DONE,
            evaluation=evaluation,
            finished_at=finished_at,
        )

    def hand_over(self, run_id: str, evaluation: Evaluation, confirmed_by: str) -> bool:
        return self._change_run(
            run_id,
            [RunStatus.RUNNING],
            status=RunStatus.CONFIRMING,
            evaluation=evaluation,
            confirmed_by=confirmed_by,
        )

    def cancel(self, run_id: str, reason: str, at: str) -> bool:
        return self._change_run(
            run_id,
            [RunStatus.RUNNING, RunStatus.CONFIRMING],
            status=RunStatus.CANCELLED,
            cancelled_reason=reason,
            finished_at=at,
        )

    def check_run(self, run_id: str) -> int | None:
        with self._lock:
            return self._check_runs.get(run_id)

    def set_check_run(self, run_id: str, check_run: int) -> bool:
        with self._lock:
            if run_id not in self._runs:
                return False
            self._check_runs[run_id] = check_run
            return True

    def suite_check_run(self, repo: str, external_id: str) -> int | None:
        with self._lock:
            return self._check_runs.get(f"{repo}#{external_id}")

    def set_suite_check_run(self, repo: str, external_id: str, check_run: int) -> None:
        with self._lock:
            self._check_runs[f"{repo}#{external_id}"] = check_run

    def claim_publication(self, run_id: str, now: int, lease_s: int = 300) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status is not RunStatus.DONE or run.published_at is not None:
                return False
            if self._leases.get(run_id, now - 1) >= now:
                return False
            self._leases[run_id] = now + lease_s
            return True

    def mark_published(self, run_id: str, now: int) -> None:
        with self._lock:
            self._runs[run_id] = replace(self._run(run_id), published_at=str(now))
            self._leases.pop(run_id, None)

    def release_publication(self, run_id: str) -> None:
        with self._lock:
            self._leases.pop(run_id, None)

    def unpublished(self) -> list[str]:
        done = [
            r for r in self._runs.values() if r.status is RunStatus.DONE and r.published_at is None
        ]
        return [r.run_id for r in sorted(done, key=lambda r: (r.finished_at or "", r.run_id))]

    def running_since_before(self, created_before: str) -> list[str]:
        queued = [
            r
            for r in self._runs.values()
            if r.status is RunStatus.RUNNING
            and r.started_at is None
            and r.created_at < created_before
        ]
        return [r.run_id for r in sorted(queued, key=lambda r: (r.created_at, r.run_id))]

    def started_before(self, counted_from_before: str) -> list[str]:
        started = [
            r
            for r in self._runs.values()
            if r.status is RunStatus.RUNNING
            and r.started_at is not None
            and r.timeout_counted_from < counted_from_before
        ]
        return [r.run_id for r in sorted(started, key=lambda r: (r.timeout_counted_from, r.run_id))]

    def mark_jobs_started(self, run: RunRecord, at: str) -> bool:
        with self._lock:
            stored = self._runs.get(run.run_id)
            if stored is None or stored.status is not RunStatus.RUNNING or stored.started_at:
                return False
            self._runs[run.run_id] = replace(stored, started_at=at)
            return True

    def of_commit(self, repo: str, sha: str) -> list[RunRecord]:
        return [r for r in self._runs.values() if (r.trigger.repo, r.trigger.sha) == (repo, sha)]

    def accept(self, run_id: str, acceptance: Acceptance) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.status is not RunStatus.DONE or run.accepted is not None:
                return False
            self._runs[run_id] = replace(run, accepted=acceptance)
            return True


class FakeHistory:
    def __init__(self) -> None:
        # keyed as the table keys them: (repo, branch, model), then created#run#config
        self.records: dict[tuple[str, str, str, str, str, str], HistoryRecord] = {}
        self.reset_records: list[ResetRecord] = []
        self.series_records: dict[tuple[str, str, str], SeriesRecord] = {}

    def put(self, records: Iterable[HistoryRecord]) -> None:
        for r in records:
            self.records[(r.repo, r.branch, r.model, r.created_at, r.run_id, r.config)] = r

    def history(
        self, repo: str, branch: str, model: str, since: str | None = None, limit: int | None = None
    ) -> Iterator[HistoryRecord]:
        found = [
            r
            for key, r in sorted(self.records.items(), reverse=True)
            if key[:3] == (repo, branch, model) and (since is None or r.created_at >= since)
        ]
        yield from found[:limit]

    def record_reset(self, reset: ResetRecord) -> None:
        self.reset_records.append(reset)

    def accept(self, run: RunRecord, acceptance: Acceptance) -> None:
        branch = run.history_branch
        for key, r in list(self.records.items()):
            if key[:3] == (run.trigger.repo, branch, run.model) and r.run_id == run.run_id:
                self.records[key] = replace(r, accepted=acceptance)

    def resets(self, repo: str, branch: str, model: str) -> list[ResetRecord]:
        return [
            r for r in self.reset_records if (r.repo, r.branch, r.model) == (repo, branch, model)
        ]

    def record_series(self, series: SeriesRecord) -> None:
        key = (series.repo, series.branch, series.model)
        current = self.series_records.get(key)
        if current is None or current.finished_at <= series.finished_at:
            self.series_records[key] = series

    def series(self, repo: str | None = None) -> list[SeriesRecord]:
        """The site's index: a branch's histories, never a pull request's."""
        return [
            s
            for k, s in sorted(self.series_records.items())
            if repo in (None, s.repo) and is_published(s.branch)
        ]


class FakeJobs:
    def __init__(self) -> None:
        self.jobs: dict[str, JobRecord] = {}

    def record(self, job: JobRecord) -> None:
        self.jobs[job.job_id] = job

    def get(self, job_id: str) -> JobRecord | None:
        return self.jobs.get(job_id)


class FakeDeliveries:
    """Each delivery's stored answer; work that raised stores none (as Powertools)."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}

    def once(self, delivery: str, work: Callable[[], dict[str, Any]]) -> Once:
        if delivery in self.answers:
            return Once(self.answers[delivery], repeat=True)
        self.answers[delivery] = answer = work()
        return Once(answer, repeat=False)


class FakePullRequests:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, int], dict[str, PullRequestRun]] = {}

    def add(self, repo: str, number: int, run: PullRequestRun) -> None:
        self.entries.setdefault((repo, number), {})[run.run_id] = run

    def runs(self, repo: str, number: int) -> list[PullRequestRun]:
        return list(self.entries.get((repo, number), {}).values())


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'


@dataclass
class FakeRunFolders:
    """The bucket as a dict of keys to bytes."""

    bucket: str = "distkpi-runs"
    objects: dict[str, bytes] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def run(self, run_id: str) -> FakeRunSource:
        return FakeRunSource(self, run_prefix(run_id))

    def put_json(self, key: str, data: Any) -> None:
        import json

        self.objects[key] = json.dumps(data).encode()

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        del content_type
        self.objects[key] = data

    def read_tagged(self, key: str) -> tuple[bytes, str] | None:
        with self.lock:
            data = self.objects.get(key)
            return None if data is None else (data, _etag(data))

    def put_if(self, key: str, data: bytes, content_type: str, etag: str | None) -> bool:
        """As S3: atomic, the ETag the MD5 of the bytes."""
        del content_type
        with self.lock:
            current = self.objects.get(key)
            if (None if current is None else _etag(current)) != etag:
                return False
            self.objects[key] = data
            return True

    def suites(self) -> tuple[list[Suite], list[BrokenSuite]]:
        """The suites under suites/, read as the SuiteCatalog reads them."""
        found = [(k.removeprefix("suites/"), v) for k, v in sorted(self.objects.items())]
        return parse_deployed_suites(
            ((name, data) for name, data in found if name.endswith(".yaml")), "suites/"
        )


@dataclass
class FakeRunSource:
    folders: FakeRunFolders
    prefix: str

    def read_bytes(self, path: str) -> bytes:
        with self.open(path) as stream:
            return stream.read()

    def open(self, path: str) -> AbstractContextManager[BinaryIO]:
        data = self.folders.objects.get(self.prefix + path)
        if data is None:
            raise NotFoundError(path)
        return io.BytesIO(data)

    def list_names(self, folder: str) -> list[str]:
        inside = f"{self.prefix}{folder.strip('/')}/"
        names = [k.removeprefix(inside) for k in self.folders.objects if k.startswith(inside)]
        return sorted(n for n in names if "/" not in n)


class FakeLauncher:
    """Batch: every plan submitted gets a job id; ``refuse`` names configs it refuses."""

    def __init__(self) -> None:
        self.submitted: dict[str, JobPlan] = {}
        self.terminated: dict[str, str] = {}
        self.refuse: set[str] = set()
        # job id -> FoundJob fields: how far a job got that ``find`` reports
        self.progress: dict[str, dict[str, str]] = {}
        self._ids = itertools.count(1)

    def submit(self, plan: JobPlan) -> tuple[str, dict[str, Any]]:
        if plan.config in self.refuse:
            raise LaunchError(f"Batch refused the job of {plan.config}")
        job_id = f"job-{next(self._ids)}"
        self.submitted[job_id] = plan
        return job_id, {"jobName": job_id}

    def find(self, plan: JobPlan) -> FoundJob | None:
        """The plan's job, as far as ``progress`` says it got (SUBMITTED when it names none)."""
        for job_id, submitted in self.submitted.items():
            if (submitted.run_id, submitted.config) == (plan.run_id, plan.config):
                found = FoundJob(job_id, {"jobName": job_id}, "SUBMITTED")
                return replace(found, **self.progress.get(job_id, {}))
        return None

    def terminate(self, job_id: str, reason: str) -> None:
        self.terminated[job_id] = reason


class FakeGitHub:
    """Records what it is told; while ``down``, every call fails as GitHub's 503 would;
    while ``paced``, a skippable write is left out as the paced writer would leave it."""

    def __init__(self) -> None:
        self.statuses: list[CommitStatus] = []
        self.checks: dict[int, dict[str, Any]] = {}
        self.removed_labels: list[tuple[str, int, str]] = []
        self.changed: list[str] | None = None
        # what a compare of (base, head) names as its merge base, and each commit's parents
        self.merge_bases: dict[tuple[str, str], str] = {}
        self.parents: dict[str, tuple[str, ...]] = {}
        # a compare's `commits`, as GitHub lists them, per (base, head)
        self.commits: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.asked: list[str] = []  # each compare and commit lookup, in order
        self.down = False
        self.paced = False
        self.skipped: list[dict[str, Any]] = []  # the skippable writes left out
        # each pull request comment as it stands: id -> repo, number, body, edits
        self.comments: dict[int, dict[str, Any]] = {}
        # files of the repository at a commit: (path, ref) -> text
        self.files: dict[tuple[str, str], str] = {}
        self.permissions: dict[str, str] = {}  # login -> role (read when not set)
        # each repository's default branch and the commit at its head
        self.heads: dict[str, tuple[str, str]] = {}

    def _answer(self, skippable: bool = False, **left_out: Any) -> None:
        if self.down:
            raise GitHubError("GitHub answered 503")
        if skippable and self.paced:
            self.skipped.append(left_out)
            raise GitHubWriteSkipped("GitHub writes paced: left out")

    def post(self, status: CommitStatus, *, skippable: bool = False) -> None:
        self._answer(skippable, status=status)
        self.statuses.append(status)

    def compare(self, repo: str, base: str, head: str, limit: int = 300) -> Comparison:
        del repo, limit
        self.asked.append(f"compare {base}...{head}")
        if self.down:
            return Comparison(problem="GitHub answered 503")
        return Comparison(self.changed, self.merge_bases.get((base, head)))

    def compare_commits(self, repo: str, base: str, head: str) -> list[dict[str, Any]]:
        del repo
        self.asked.append(f"compare commits {base}...{head}")
        self._answer()
        if (base, head) not in self.commits:
            raise GitHubError("GitHub answered 404 to GET for the compare")
        return self.commits[(base, head)]

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        del repo
        self.asked.append(f"commit {sha}")
        self._answer()
        if sha not in self.parents:
            raise GitHubError("GitHub answered 404 to GET for the commit")
        return self.parents[sha]

    def default_branch_head(self, repo: str) -> tuple[str, str]:
        self.asked.append(f"head {repo}")
        self._answer()
        if repo not in self.heads:
            raise GitHubError(f"GitHub answered 404 to GET for {repo}")
        return self.heads[repo]

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self._answer()
        self.removed_labels.append((repo, number, label))

    def create_check_run(self, repo: str, body: dict[str, Any], *, skippable: bool = False) -> int:
        del repo
        self._answer(skippable, check=body)
        check_id = len(self.checks) + 1
        self.checks[check_id] = {"id": check_id, **body}
        return check_id

    def update_check_run(
        self, repo: str, check_run: int, body: dict[str, Any], *, skippable: bool = False
    ) -> None:
        del repo
        self._answer(skippable, check=body)
        self.checks[check_run].update(body)

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        self._answer()
        comment_id = max(self.comments, default=0) + 1
        self.comments[comment_id] = {"repo": repo, "number": number, "body": body, "edits": 0}
        return comment_id

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> None:
        self._answer()
        comment = self.comments.get(comment_id)
        if comment is None or comment["repo"] != repo:
            raise GitHubNotFoundError("GitHub answered 404 to PATCH")
        comment.update(body=body, edits=comment["edits"] + 1)

    def file_text(self, repo: str, path: str, ref: str) -> str | None:
        del repo
        self.asked.append(f"contents {path}@{ref}")
        self._answer()
        return self.files.get((path, ref))

    def collaborator_permission(self, repo: str, login: str) -> str:
        del repo
        self._answer()
        return self.permissions.get(login, "read")


class FakeAlarms:
    def __init__(self) -> None:
        self.states: dict[tuple[str, str, str], AlarmState] = {}

    def get(self, repo: str, branch: str, model: str) -> AlarmState:
        return self.states.get((repo, branch, model), AlarmState())

    def put(self, repo: str, branch: str, model: str, state: AlarmState) -> None:
        self.states[(repo, branch, model)] = state


class FakeBisections:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.stored: dict[tuple[str, str, str, str], Bisection] = {}

    @staticmethod
    def _key(b: Bisection) -> tuple[str, str, str, str]:
        return b.repo, b.branch, b.model, b.bad_run_id

    def get(self, repo: str, branch: str, model: str, bad_run_id: str) -> Bisection | None:
        return self.stored.get((repo, branch, model, bad_run_id))

    def of_branch(self, repo: str, branch: str, model: str) -> list[Bisection]:
        found = [b for k, b in self.stored.items() if k[:3] == (repo, branch, model)]
        return sorted(found, key=lambda b: (b.created_at, b.bad_run_id))

    def create(self, bisection: Bisection) -> bool:
        with self._lock:
            if self._key(bisection) in self.stored:
                return False
            self.stored[self._key(bisection)] = bisection
            return True

    def save(self, bisection: Bisection) -> bool:
        with self._lock:
            current = self.stored.get(self._key(bisection))
            if current is None or current.revision != bisection.revision:
                return False
            self.stored[self._key(bisection)] = replace(bisection, revision=bisection.revision + 1)
            return True


class FakeComments:
    def __init__(self) -> None:
        self.kept: dict[tuple[str, int, str], KeptComment] = {}

    def get(self, repo: str, number: int, suite: str) -> KeptComment | None:
        return self.kept.get((repo, number, suite))

    def keep(self, repo: str, number: int, suite: str, comment: KeptComment) -> None:
        self.kept[(repo, number, suite)] = comment


class FakeChat:
    """Records each message; while ``down``, refuses as Slack's 503 would."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.down = False

    def post(self, message: dict[str, Any]) -> None:
        if self.down:
            raise ChatError("Slack answered 503")
        self.messages.append(message)


class FakeChatQuota:
    def __init__(self) -> None:
        self.sent: dict[tuple[str, str], int] = {}

    def take(self, suite: str, hour: str) -> int:
        self.sent[(suite, hour)] = self.sent.get((suite, hour), 0) + 1
        return self.sent[(suite, hour)]

    def taken(self, suite: str, hour: str) -> int:
        return self.sent.get((suite, hour), 0)


class FakeRegressions:
    """Regressions by (repo, branch, model, id); a save is conditional on the one read."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.stored: dict[tuple[str, str, str, str], Regression] = {}

    def get(self, repo: str, branch: str, model: str, regression_id: str) -> Regression | None:
        return self.stored.get((repo, branch, model, regression_id))

    def of_branch(self, repo: str, branch: str, model: str) -> list[Regression]:
        found = [r for k, r in self.stored.items() if k[:3] == (repo, branch, model)]
        return sorted(found, key=lambda r: (r.opened_at, r.id))

    def create(self, regression: Regression) -> bool:
        r = regression
        with self._lock:
            if (r.repo, r.branch, r.model, r.id) in self.stored:
                return False
            self.stored[(r.repo, r.branch, r.model, r.id)] = r
            return True

    def save(self, before: Regression, after: Regression) -> bool:
        key = (after.repo, after.branch, after.model, after.id)
        with self._lock:
            current = self.stored.get(key)
            if current is None or len(current.history) != len(before.history):
                return False
            self.stored[key] = after
            return True


class FakeTopic:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []

    def publish(self, subject: str, message: str) -> None:
        self.messages.append((subject, message))


class FakeQueue:
    """A work queue (services/ports.WorkQueue) that keeps what was sent, in order."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: Mapping[str, Any]) -> None:
        self.sent.append(dict(message))

    def send_all(self, messages: Iterable[Mapping[str, Any]]) -> int:
        before = len(self.sent)
        self.sent += [dict(m) for m in messages]
        return len(self.sent) - before


class Clock:
    """A clock the test moves."""

    def __init__(self, at: datetime = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)) -> None:
        self.now = at

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Counts:
    """A metrics counter that remembers."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}

    def __call__(self, name: str, value: int = 1) -> None:
        self.totals[name] = self.totals.get(name, 0) + value


def plain_report(
    run: RunRecord,
    history: Sequence[HistoryRow],
    logs: Mapping[str, Sequence[str]],
    diagnoses: Mapping[str, Mapping[str, Any]],
) -> dict[str, bytes]:
    """A report page naming the run and its verdict, without charts: for the tests of what
    follows a report (bisections publish a dozen runs each), where drawing the real one
    (reporting/page.py, a second or so with its charts) shows nothing more."""
    assert run.evaluation is not None
    state = run.evaluation.verdict.state.value
    page = f"<!doctype html><title>{run.run_id}</title><p>{state}; {len(history)} runs before"
    page += "".join(f"<p>{c} diagnosed: {d.get('line')}" for c, d in sorted(diagnoses.items()))
    return {"index.html": page.encode()}
