"""What the pipeline stores, as records. The DynamoDB repositories (adapters/dynamo) map
items to these and back, so no code above them knows an attribute name or a key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from distkpi.domain.contracts import RunSpec
from distkpi.domain.github.acceptance import Acceptance
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.judging.settings import VerdictSettings

if TYPE_CHECKING:  # the KPI engine stays off the webhook's imports
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus


PULL_REQUEST_HISTORY = "pr:"


def history_branch(event: str, branch: str, pull_request: int | None) -> str:
    """Whose history a run's results join. A push (only to a configured branch starts runs)
    joins its branch's. A pull request's runs stay apart under ``pr:<number>``, a name no git
    branch can have: its head branch may be called ``develop`` in a fork, and a pull
    request's numbers must never become a branch's baseline."""
    if event != "pull_request":
        return branch
    return f"{PULL_REQUEST_HISTORY}{pull_request if pull_request is not None else branch}"


def is_published(branch: str) -> bool:
    """Whether a history goes on the site: a branch's does, a pull request's never."""
    return not branch.startswith(PULL_REQUEST_HISTORY)


class RunStatus(StrEnum):
    RUNNING = "running"
    # its configs are settled, but its verdict waits for a confirmation run (confirmed_by)
    CONFIRMING = "confirming"
    DONE = "done"
    CANCELLED = "cancelled"


class ConfigState(StrEnum):
    """Pending, then settled as its KPIs' status (domain.kpis.ConfigStatus)."""

    PENDING = "pending"
    OK = "ok"
    FAILED = "failed"
    INCOMPLETE = "incomplete"

    @classmethod
    def settled_as(cls, status: ConfigStatus) -> ConfigState:
        return cls(status.value)


def _later(at: str, seconds: int) -> str:
    return (datetime.fromisoformat(at) + timedelta(seconds=seconds)).isoformat(
        timespec="milliseconds"
    )


@dataclass(frozen=True)
class RunRecord:
    """One run: a suite for one commit, from the delivery that started it to its verdict."""

    run_id: str
    trigger: Trigger
    model: str
    spec: RunSpec
    delivery: str
    verdict_settings: VerdictSettings
    created_at: str
    configs_total: int
    status: RunStatus = RunStatus.RUNNING
    configs_done: frozenset[str] = frozenset()
    evaluation: Evaluation | None = None
    finished_at: str | None = None
    published_at: int | None = None
    cancelled_reason: str | None = None
    # confirming by re-running: the n-th run of this commit, the first's id, the next's id
    attempt: int = 1
    confirms: str | None = None
    confirmed_by: str | None = None
    # how much longer than the stack's run timeout it may take (a paired job's further runs
    # of the command: domain/planning/jobs.extra_run_time_s)
    extra_time_s: int = 0
    # a bisection's step: the id of the regressed run it bisects (in no history, no status)
    bisection: str | None = None
    # its regressed KPIs accepted by someone who may (services/accept.py): who, when, why
    accepted: Acceptance | None = None
    # when its first job started (Batch's RUNNING); None while every job waits in the queue
    started_at: str | None = None

    @property
    def queue_wait_s_taken(self) -> int | None:
        """Seconds its jobs waited in the queue before the first started; None before."""
        if self.started_at is None:
            return None
        waited = datetime.fromisoformat(self.started_at) - datetime.fromisoformat(self.created_at)
        return max(0, round(waited.total_seconds()))

    @property
    def timeout_counted_from(self) -> str:
        """When the stack's run timeout starts counting for this run: its first job's start,
        later by its extra time (ISO, as `created_at`); before any job started, its creation
        (and the stack's queue wait counts instead)."""
        if self.started_at is None:
            return self.created_at
        return _later(self.started_at, self.extra_time_s)

    @property
    def first_run_id(self) -> str:
        """The run whose confirmation this is, or this run itself."""
        return self.confirms or self.run_id

    @property
    def history_branch(self) -> str:
        """Whose history this run's results join (see domain.history.history_branch)."""
        t = self.trigger
        return history_branch(t.event, t.branch, t.pull_request)

    @property
    def baseline_branch(self) -> str:
        """Whose history it is judged against: a pull request's base, a push's own branch."""
        return self.trigger.base_branch


@dataclass(frozen=True)
class ConfigRecord:
    run_id: str
    name: str
    nodes_expected: int
    state: ConfigState = ConfigState.PENDING
    nodes_reported: frozenset[int] = frozenset()
    kpis: ConfigKpis | None = None
    job_id: str | None = None
    # a paired config's decisions after each pair (pair -> LookDecision.to_json())
    looks: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    # the nodes whose look manifest of each pair has arrived (pair -> nodes)
    look_arrivals: Mapping[int, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class JobRecord:
    """Which run and config a Batch job serves, and exactly what was submitted."""

    job_id: str
    run_id: str
    config: str
    request: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FoundJob:
    """A job Batch took before its id was kept (JobLauncher.find): its id, the request as
    ``submit`` answers it, and how far it got since (Batch's status; when it started, ISO;
    why it failed), which its events told while it was nobody's."""

    job_id: str
    request: Mapping[str, Any]
    status: str
    started_at: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class PullRequestRun:
    """A run started for a pull request (so a newer push can supersede it)."""

    run_id: str
    sha: str
    model: str
    updated_at: str
    created_at: str


@dataclass(frozen=True)
class HistoryRecord:
    """One config's KPIs of one finished run, under (repo, branch, model)."""

    repo: str
    branch: str
    model: str
    config: str
    sha: str
    run_id: str
    created_at: str
    finished_at: str
    kpis: ConfigKpis
    # per KPI, how this run's value was judged: {"low", "high", "verdict"} (the history site
    # shades the range and marks regressions); empty for records from before it was kept
    judged: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # a paired run's first pair, per KPI: the paired history's value (HistoryRow.paired_d)
    paired: Mapping[str, float] = field(default_factory=dict)
    # an A/A run of `distkpi calibrate` (its sha in both arms): read back by that command
    calibration: bool = False
    # the run's regressed KPIs accepted (who, when, why), when they were
    accepted: Acceptance | None = None
    # the run's verdict (success, failure, error); None for records from before it was kept
    verdict: str | None = None


@dataclass(frozen=True)
class SeriesRecord:
    """A (repo, branch, model) whose history exists, with its latest run: what the history
    site's index lists, found by key rather than by scanning the history."""

    repo: str
    branch: str
    model: str
    run_id: str
    state: str
    description: str
    finished_at: str


@dataclass(frozen=True)
class ResetRecord:
    """An audited baseline reset: history before ``at`` no longer counts for ``config``."""

    repo: str
    branch: str
    model: str
    config: str
    reason: str
    who: str
    at: str
