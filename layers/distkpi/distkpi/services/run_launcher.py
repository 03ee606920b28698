"""What every way of starting a run shares: a run's record, its jobs planned and submitted,
`pending` posted; and a cancelled run's jobs stopped. The use cases (a delivery, a re-run, a
calibration, a follow-up, superseding) decide which runs; this part starts or stops them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from distkpi.domain.commit_status import State
from distkpi.domain.contracts import RunSpec
from distkpi.domain.github.commits import NoBase
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.layout import run_spec_key
from distkpi.domain.planning.jobs import JobPlan, extra_run_time_s, plan_jobs
from distkpi.domain.planning.sizing import Fleet
from distkpi.domain.planning.suites import Suite
from distkpi.domain.purpose import policy_of
from distkpi.domain.records import (
    ConfigState,
    FoundJob,
    JobRecord,
    PullRequestRun,
    RunRecord,
    RunStatus,
)
from distkpi.domain.signing import ManifestKeys
from distkpi.exceptions import LaunchError
from distkpi.services.job_starts import JobStarts
from distkpi.services.jobs import stop_jobs
from distkpi.services.ports import (
    Clock,
    Counter,
    JobLauncher,
    Jobs,
    PullRequests,
    RunFolders,
    Runs,
    no_metrics,
    utcnow,
)
from distkpi.services.statuses import StatusPublisher

if TYPE_CHECKING:
    from distkpi.services.settle import ConfigSettler

logger = Logger(child=True)


class Outcome(Enum):
    STARTED = "started"
    DUPLICATE = "duplicate"


@dataclass(frozen=True)
class Delivery:
    """What a delivery started: its runs, the suite files that could not be read, the runs
    still going that a re-run was refused for, and the suites a re-run was refused for
    because no delivery admitted for that commit ever ran them."""

    outcome: Outcome
    runs: list[str] = field(default_factory=list)
    invalid_suites: list[str] = field(default_factory=list)
    refused_for: list[str] = field(default_factory=list)
    never_admitted: list[str] = field(default_factory=list)
    # why a calibration started nothing (no such suite for the repository, one not pairable)
    refused: str | None = None
    # a repeat's: the answer stored by the attempt that did the work
    stored: Delivery | None = None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "outcome": self.outcome.value, "stored": None}

    @classmethod
    def from_json(cls, answer: dict[str, Any]) -> Delivery:
        return cls(**{**answer, "outcome": Outcome(answer["outcome"]), "stored": None})

    def repeated(self) -> Delivery:
        """What a repeat of this delivery is told: nothing started now, and this answer."""
        return Delivery(Outcome.DUPLICATE, stored=self)


def repeat_of(answer: dict[str, Any] | None) -> Delivery:
    """What a delivery seen before is told: its stored answer, or nothing while the first
    attempt is still at work in another invocation."""
    if answer is None:
        logger.info("delivery in progress in another invocation; nothing started")
        return Delivery(Outcome.DUPLICATE)
    stored = Delivery.from_json(answer)
    logger.info("delivery seen before; nothing started", runs=stored.runs)
    return stored.repeated()


@dataclass
class RunLauncher:
    runs: Runs
    jobs: Jobs
    pull_requests: PullRequests
    store: RunFolders
    statuses: StatusPublisher
    launcher: JobLauncher | None
    keys: ManifestKeys  # each config's, given to its job only
    # the fan-in, made only when Batch refuses a job: the KPI engine stays off the cold start
    settler: Callable[[], ConfigSettler] | None = None
    # what the compute environment can give, asked of EC2 when a run is first planned;
    # None: every node asks for what the job definitions say
    fleet: Callable[[], Fleet | None] | None = None
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def record(
        self, run_id: str, trigger: Trigger, suite: Suite, spec: RunSpec, delivery: str
    ) -> RunRecord:
        return RunRecord(
            run_id=run_id,
            trigger=trigger,
            model=suite.name,
            spec=spec,
            delivery=delivery,
            verdict_settings=suite.verdict,
            created_at=self.now(),
            configs_total=len(spec.configs),
            extra_time_s=extra_run_time_s(spec, suite),
        )

    def now(self) -> str:
        return self.clock().isoformat(timespec="milliseconds")

    def launch(
        self,
        record: RunRecord,
        suite: Suite,
        description: str | None,
        no_base: NoBase | None = None,
        *,
        resume: bool = False,
    ) -> bool:
        """Record the run, submit its jobs, then post `pending` (none without
        ``description``, nor when no job was submitted, the run having ended with its
        reason, nor when it ended while they were submitted): the jobs never wait for
        GitHub, and `pending` is left out when GitHub's write rate is spent (the run's
        result stands without it); False when it exists already (a retried delivery, or a
        confirmation that another finisher started). A paired run with ``no_base`` submits
        nothing: each config fails with the reason. ``resume`` (a delivery's own run, under
        its claim): a run that exists with configs never submitted, its invocation having
        ended first, goes on."""
        spec, trigger = record.spec, record.trigger
        only = None
        if not self.runs.create(record, {c.name: c.nodes for c in spec.configs}):
            only = self._never_submitted(record.run_id) if resume else []
            if not only:
                logger.info("run exists already", run_id=record.run_id)
                return False
            logger.warning("run resumed: never submitted", run_id=record.run_id, configs=only)
        # a pull request's runs are its commits' results: a diagnosis job's run is none
        # (neither what an accept or a comment speaks of, nor superseded by a new push)
        if trigger.pull_request is not None and policy_of(record).published:
            entry = PullRequestRun(
                record.run_id, trigger.sha, suite.name, trigger.updated_at or "", record.created_at
            )
            self.pull_requests.add(trigger.repo, trigger.pull_request, entry)
        self.store.put_json(run_spec_key(record.run_id), spec.to_json())
        self.count("RunsResumed" if only else "RunsStarted")
        if no_base is not None:
            self._refuse_without_base(spec, no_base)
            return True
        submitted = self._submit(spec, suite, only)
        if submitted and description is not None and self._running(record.run_id):
            self.statuses.post(spec, State.PENDING, description, skippable=True)
        logger.info(
            "run started",
            run_id=record.run_id,
            sha=trigger.sha,
            model=suite.name,
            attempt=record.attempt,
        )
        return True

    def mark_cancelled(self, run_id: str, reason: str) -> bool:
        """False when the run had ended, or was cancelled already."""
        return self.runs.cancel(run_id, reason, self.clock().isoformat(timespec="seconds"))

    def stop_pending(self, run_id: str, reason: str) -> None:
        """Stop the jobs of a cancelled run's configs still pending."""
        pending = [c for c in self.runs.configs(run_id) if c.state is ConfigState.PENDING]
        jobs = [c.job_id for c in pending if c.job_id is not None]
        stop_jobs(self.launcher, jobs, run_id, reason, self.count)

    def _never_submitted(self, run_id: str) -> list[str]:
        return [
            c.name
            for c in self.runs.configs(run_id)
            if c.job_id is None and c.state is ConfigState.PENDING
        ]

    def _submit(self, run: RunSpec, suite: Suite, only: Sequence[str] | None = None) -> int:
        """Plan and submit each config's job (``only``: just those configs); how many jobs
        were submitted (or found submitted)."""
        if self.launcher is None:
            raise LaunchError("no Batch launcher configured")
        try:
            fleet = self.fleet() if self.fleet is not None else None
        except LaunchError as exc:  # a stack parameter naming no instance type: no job runs
            logger.exception("compute environment unknown", run_id=run.run_id)
            for spec in run.configs:
                self._fail(run.run_id, spec.name, f"not submitted: {exc}")
            return 0
        manifest_keys = {c.name: self.keys.for_config(run.run_id, c.name) for c in run.configs}
        plans = plan_jobs(run, suite, self.store.bucket, manifest_keys, fleet)
        refused = [p.refusal for p in plans if p.refusal is not None]
        if refused:
            self._refuse(run, plans, refused[0])
            return 0
        submitted = 0
        for plan in plans:
            if only is not None and plan.config not in only:
                continue
            try:
                # resumed: the dead invocation may have submitted it without keeping its id
                found = self.launcher.find(plan) if only is not None else None
                job_id, request = (
                    (found.job_id, found.request) if found else self.launcher.submit(plan)
                )
            except LaunchError as exc:
                logger.exception("job not submitted", run_id=run.run_id, config=plan.config)
                self._fail(run.run_id, plan.config, str(exc))
                continue
            self.jobs.record(JobRecord(job_id, run.run_id, plan.config, request))
            self.runs.set_job(run.run_id, plan.config, job_id)
            if found is not None:
                logger.warning(
                    "job found submitted",
                    run_id=run.run_id,
                    config=plan.config,
                    status=found.status,
                )
                self.count("JobsFoundSubmitted")
                self._caught_up(found)
            logger.info("job submitted", run_id=run.run_id, config=plan.config, job_id=job_id)
            submitted += 1
        return submitted

    def _running(self, run_id: str) -> bool:
        """Whether the run still runs: a status is GitHub's last write, and a run whose jobs
        all ended while it was submitted (a resumed one's found jobs) has posted its result."""
        run = self.runs.get(run_id)
        return run is not None and run.status is RunStatus.RUNNING

    def _caught_up(self, found: FoundJob) -> None:
        """What a found job did while its id was not kept: its events then were nobody's
        (job_events drops a job without its JOB# item), so its start counts the run's time
        from then, and its end settles its config, now."""
        if found.started_at is not None:
            JobStarts(self.jobs, self.runs, self.count).on_job_running(
                found.job_id, found.started_at
            )
        if self.settler is None or found.status not in ("FAILED", "SUCCEEDED"):
            return
        if found.status == "FAILED":
            self.settler().on_job_failed(found.job_id, found.reason or "no reason given by Batch")
        else:
            self.settler().on_job_succeeded(found.job_id)

    def _refuse(self, run: RunSpec, plans: Sequence[JobPlan], first_refusal: str) -> None:
        """A config that can never be placed makes the run's verdict `error` whatever the
        others measure, so none is submitted: the run ends at once, saying why."""
        logger.error("run not placeable", run_id=run.run_id, reason=first_refusal)
        self.count("RunsNotPlaceable")
        for plan in sorted(plans, key=lambda p: p.refusal is None):
            reason = plan.refusal or f"not submitted: {first_refusal}"
            self._fail(run.run_id, plan.config, reason, prefix="")

    def _refuse_without_base(self, run: RunSpec, no_base: NoBase) -> None:
        """A paired run with nothing to measure its head against ends `error` at once."""
        logger.error("paired run has no base", run_id=run.run_id, reason=no_base.reason)
        self.count("RunsWithoutBase")
        for spec in run.configs:
            self._fail(run.run_id, spec.name, f"not submitted: {no_base}", prefix="")

    def _fail(self, run_id: str, config: str, reason: str, prefix: str = "job failed: ") -> None:
        if self.settler is None:
            raise LaunchError(f"job of {run_id} {config} refused, and no fan-in to settle it")
        self.settler().fail_config(run_id, config, reason, prefix=prefix)
