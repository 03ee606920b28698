"""The webhook's side: a delivery's transaction, a run per suite with its records, one Batch
job per config, `pending`, and the superseding of a pull request's older runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from distkpi.domain.commit_status import State, confirming_description, pending_description
from distkpi.domain.contracts import RunSpec
from distkpi.domain.github.commits import NoBase
from distkpi.domain.github.trust import NeedsApproval, approval_description
from distkpi.domain.github.webhook import Calibrate, Rerun, Trigger
from distkpi.domain.layout import run_spec_key
from distkpi.domain.planning.jobs import (
    JobPlan,
    calibration_run_id,
    calibration_suite,
    confirmation_run_id,
    confirmation_spec,
    extra_run_time_s,
    plan_jobs,
    run_id_for,
    run_spec_for,
)
from distkpi.domain.planning.sizing import Fleet
from distkpi.domain.planning.suites import BrokenSuite, Suite
from distkpi.domain.purpose import policy_of
from distkpi.domain.records import ConfigState, JobRecord, PullRequestRun, RunRecord, RunStatus
from distkpi.domain.signing import ManifestKeys
from distkpi.exceptions import LaunchError
from distkpi.services.change import Change
from distkpi.services.jobs import stop_jobs
from distkpi.services.ports import (
    Clock,
    Counter,
    Deliveries,
    JobLauncher,
    Jobs,
    PullRequests,
    RunFolders,
    Runs,
    SuiteSource,
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


@dataclass
class RunStarter:
    runs: Runs
    deliveries: Deliveries
    jobs: Jobs
    pull_requests: PullRequests
    store: RunFolders
    catalog: SuiteSource
    statuses: StatusPublisher
    launcher: JobLauncher | None
    keys: ManifestKeys  # each config's, given to its job only
    cancel_superseded: bool = True
    # the fan-in, made only when Batch refuses a job: the KPI engine stays off the cold start
    settler: Callable[[], ConfigSettler] | None = None
    # what the compute environment can give, asked of EC2 when a run is first planned;
    # None: every node asks for what the job definitions say
    fleet: Callable[[], Fleet | None] | None = None
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)

    def handle_delivery(
        self,
        trigger: Trigger,
        delivery: str,
        only: Sequence[str] | None = None,
        base: str | None = None,
    ) -> Delivery:
        """A delivery's whole transaction: done once (its claim expires with the invocation,
        its answer is stored for repeats); if starting raises, released for GitHub's
        redelivery; broken suites reported; older runs of a pull request superseded.
        ``only``: just those suites (a re-run), whatever their paths; ``base``: the commit
        its paired suites measure against, when known (a re-run keeps the run's own)."""
        change = Change(self.statuses, trigger, base)
        seen: list[tuple[list[Suite], list[BrokenSuite], list[Suite]]] = []

        def start() -> dict[str, Any]:
            suites, broken = self.catalog.suites()
            suites = [s for s in suites if s.runs_for(trigger.repo)]
            untouched: list[Suite] = []
            if only is not None:
                suites, broken = [s for s in suites if s.name in only], []
            else:
                suites, untouched = self._touched(suites, change)
            started = self.start_runs(trigger, delivery, suites, change)
            seen.append((suites, broken, untouched))
            return Delivery(Outcome.STARTED, started, [s.name for s in broken]).to_json()

        done = self.deliveries.once(delivery, start)
        if done.repeat:
            return self._repeat(done.answer)
        ((suites, broken, untouched),) = seen
        self.report_broken(trigger, broken)
        self.report_skipped(trigger, untouched)
        if self.cancel_superseded:
            self._supersede_quietly(trigger, [s.name for s in suites])
        assert done.answer is not None
        return Delivery.from_json(done.answer)

    @staticmethod
    def _repeat(answer: dict[str, Any] | None) -> Delivery:
        if answer is None:
            logger.info("delivery in progress in another invocation; nothing started")
            return Delivery(Outcome.DUPLICATE)
        stored = Delivery.from_json(answer)
        logger.info("delivery seen before; nothing started", runs=stored.runs)
        return stored.repeated()

    def rerun(self, rerun: Rerun, delivery: str) -> Delivery:
        """New runs of the re-requested suites at that commit (new run ids; the earlier runs
        stay in the history, where a commit counts once). A suite whose run of that commit
        is still going is refused, saying so in its check.

        A re-run goes through the trust decision of the delivery that started the run it
        repeats, never around it: it repeats a run of this commit (the check's, or each
        suite's latest), with that run's trigger, so a commit that was never admitted (a
        fork's pull request awaiting approval: its check is `action_required`) starts
        nothing, and a fork's check naming no pull request is never taken for a push."""
        trigger = rerun.trigger
        # A/A runs are no check of the commit's: a re-run neither repeats nor waits for them
        of_commit = [
            r
            for r in self.runs.of_commit(trigger.repo, trigger.sha)
            if policy_of(r).repeated_by_rerun
        ]
        going = {
            r.model: r
            for r in of_commit
            if r.status in (RunStatus.RUNNING, RunStatus.CONFIRMING)
            and (rerun.suites is None or r.model in rerun.suites)
        }
        for run in going.values():
            message = f"re-run refused: run {run.run_id} of this commit is still going"
            self.statuses.still_going(run.spec, message)
            logger.info("re-run refused: run still going", run_id=run.run_id)
        if rerun.suites is not None and set(rerun.suites) <= set(going):
            return Delivery(Outcome.STARTED, refused_for=[r.run_id for r in going.values()])
        suites, _ = self.catalog.suites()
        wanted = [
            s.name
            for s in suites
            if (rerun.suites is None or s.name in rerun.suites) and s.name not in going
        ]
        admitted, repeated = _admitted_runs(of_commit, wanted, rerun.previous)
        never = [name for name in wanted if name not in admitted]
        if never:
            self.count("RerunsRefused", len(never))
            logger.warning("re-run refused: no admitted run of this commit", suites=never)
        refused = [r.run_id for r in going.values()]
        if repeated is None:
            return Delivery(Outcome.STARTED, refused_for=refused, never_admitted=never)
        base = _paired_base(of_commit, repeated, admitted)
        started = self.handle_delivery(repeated, delivery, only=admitted, base=base)
        self.count("RerunsStarted", len(started.runs))
        return replace(started, refused_for=refused, never_admitted=never)

    def calibrate(self, asked: Calibrate, delivery: str) -> Delivery:
        """``asked.jobs`` A/A paired runs of the suite at the commit, each its own run, named
        by the delivery so that a redelivery starts none twice. Their history joins the
        branch's, seeding its paired history; their status has its own context."""
        trigger = asked.trigger
        suites, broken = self.catalog.suites()
        suite = next((s for s in suites if s.name == asked.model), None)
        if suite is None or not suite.runs_for(trigger.repo):
            unreadable = [b.problem for b in broken if b.name == asked.model]
            why = f"no suite {asked.model!r} runs for {trigger.repo}"
            return Delivery(Outcome.STARTED, refused=unreadable[0] if unreadable else why)
        calibrated = calibration_suite(suite)
        if isinstance(calibrated, str):
            return Delivery(Outcome.STARTED, refused=calibrated)

        def start() -> dict[str, Any]:
            started: list[str] = []
            for job in range(1, asked.jobs + 1):
                run_id = calibration_run_id(suite.name, trigger.sha, delivery, job)
                spec = run_spec_for(run_id, trigger, calibrated, calibration=True)
                record = self._record(run_id, trigger, calibrated, spec, delivery)
                description = f"calibration: A/A job {job} of {asked.jobs}"
                if self.launch(record, calibrated, description, resume=True):
                    started.append(run_id)
            return Delivery(Outcome.STARTED, started).to_json()

        done = self.deliveries.once(delivery, start)
        if done.repeat:
            return self._repeat(done.answer)
        assert done.answer is not None
        answer = Delivery.from_json(done.answer)
        self.count("CalibrationRuns", len(answer.runs))
        return answer

    def _suite(self, name: str) -> Suite | None:
        suites, _ = self.catalog.suites()
        return next((s for s in suites if s.name == name), None)

    def _record(
        self, run_id: str, trigger: Trigger, suite: Suite, spec: RunSpec, delivery: str
    ) -> RunRecord:
        return RunRecord(
            run_id=run_id,
            trigger=trigger,
            model=suite.name,
            spec=spec,
            delivery=delivery,
            verdict_settings=suite.verdict,
            created_at=self.clock().isoformat(timespec="milliseconds"),
            configs_total=len(spec.configs),
            extra_time_s=extra_run_time_s(spec, suite),
        )

    def start_runs(
        self,
        trigger: Trigger,
        delivery: str,
        suites: Iterable[Suite],
        change: Change | None = None,
    ) -> list[str]:
        """A run of each suite; a paired suite's measures the commit against its base (a
        pull request's merge base, a push's first parent), and without one it is `error` at
        once, saying why, with no job submitted."""
        change = change or Change(self.statuses, trigger)
        started: list[str] = []
        for suite in suites:
            run_id = run_id_for(suite.name, trigger.sha, delivery)
            base = change.paired_base() if suite.verdict.paired is not None else None
            no_base = base if isinstance(base, NoBase) else None
            spec = run_spec_for(run_id, trigger, suite, base if isinstance(base, str) else None)
            record = self._record(run_id, trigger, suite, spec, delivery)
            gpus = max(c.gpus for c in spec.configs)
            description = pending_description(len(spec.configs), gpus)
            if self.launch(record, suite, description, no_base, resume=True):
                started.append(run_id)
        return started

    def confirm(self, run: RunRecord, configs: Sequence[str]) -> str | None:
        """Run ``configs`` of ``run``'s commit once more, as the next run confirming the
        first; its id, or None when the suite is gone (the verdict then stands as it is)."""
        first = run.first_run_id
        attempt = run.attempt + 1
        suite = self._suite(run.model)
        confirm = run.verdict_settings.confirm
        if suite is None or confirm is None:
            logger.warning("suite gone; not confirmed", run_id=run.run_id, model=run.model)
            return None
        run_id = confirmation_run_id(first, attempt)
        spec = confirmation_spec(run.spec, run_id, configs)
        record = RunRecord(
            run_id=run_id,
            trigger=run.trigger,
            model=run.model,
            spec=spec,
            delivery=run.delivery,
            verdict_settings=run.verdict_settings,
            created_at=self.clock().isoformat(timespec="milliseconds"),
            configs_total=len(spec.configs),
            attempt=attempt,
            confirms=first,
        )
        description = confirming_description(configs, attempt, confirm.max_runs)
        if self.launch(record, suite, description):
            self.count("ConfirmationRuns")
        return run_id

    def start_step(
        self, bad: RunRecord, run_id: str, sha: str, configs: Sequence[str], good: str
    ) -> bool:
        """A bisection's step: ``configs`` of ``bad``'s run at commit ``sha`` (a paired suite's
        as an A/B of the good commit against it), linked to ``bad``; no status is posted (the
        commit was never asked about). Whether the step's run exists now (another finisher
        may have started it); False when the suite is gone."""
        suite = self._suite(bad.model)
        if suite is None:
            logger.warning("suite gone; no bisection step", run_id=bad.run_id, model=bad.model)
            return False
        trigger = replace(bad.trigger, sha=sha, before=None)
        spec = confirmation_spec(
            run_spec_for(run_id, trigger, suite, good if suite.verdict.paired else None),
            run_id,
            configs,
        )
        record = self._record(run_id, trigger, suite, spec, bad.delivery)
        if self.launch(replace(record, bisection=bad.run_id), suite, None):
            self.count("BisectionRuns")
        return True

    def cancel_step(self, run_id: str, reason: str) -> bool:
        """Cancel a bisection's step run and stop its jobs (it posted no status)."""
        if not self.runs.cancel(run_id, reason, self.clock().isoformat(timespec="seconds")):
            return False
        pending = [c for c in self.runs.configs(run_id) if c.state is ConfigState.PENDING]
        jobs = [c.job_id for c in pending if c.job_id is not None]
        stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        logger.info("bisection step cancelled", run_id=run_id, reason=reason)
        return True

    def launch(
        self,
        record: RunRecord,
        suite: Suite,
        description: str | None,
        no_base: NoBase | None = None,
        *,
        resume: bool = False,
    ) -> bool:
        """Record the run, submit its jobs and post `pending` (none without ``description``);
        False when it exists already (a retried delivery, or a confirmation that another
        finisher started). A paired run with ``no_base`` submits nothing: each config fails
        with the reason. ``resume`` (a delivery's own run, under its claim): a run that
        exists with configs never submitted, its invocation having ended first, goes on."""
        spec, trigger = record.spec, record.trigger
        only = None
        if not self.runs.create(record, {c.name: c.nodes for c in spec.configs}):
            only = self._never_submitted(record.run_id) if resume else []
            if not only:
                logger.info("run exists already", run_id=record.run_id)
                return False
            logger.warning("run resumed: never submitted", run_id=record.run_id, configs=only)
        if trigger.pull_request is not None:
            entry = PullRequestRun(
                record.run_id, trigger.sha, suite.name, trigger.updated_at or "", record.created_at
            )
            self.pull_requests.add(trigger.repo, trigger.pull_request, entry)
        self.store.put_json(run_spec_key(record.run_id), spec.to_json())
        self.count("RunsResumed" if only else "RunsStarted")
        if description is not None:
            self.statuses.post(spec, State.PENDING, description)
        if no_base is not None:
            self._refuse_without_base(spec, no_base)
            return True
        self._submit(spec, suite, only)
        logger.info(
            "run started",
            run_id=record.run_id,
            sha=trigger.sha,
            model=suite.name,
            attempt=record.attempt,
        )
        return True

    def _supersede_quietly(self, trigger: Trigger, models: list[str]) -> None:
        """The new runs have started whatever happens here, so a failure is logged."""
        try:
            self.supersede(trigger, models)
        except Exception:
            logger.exception("superseded runs not cancelled")
            self.count("SupersedeFailures")

    def supersede(self, trigger: Trigger, models: Iterable[str]) -> list[str]:
        """Keep only the runs of a pull request's newest head, per suite: the others are
        cancelled and their jobs stopped, since nobody waits for those results and the new
        runs need the GPUs. "Newest" is by the pull request's `updated_at`, so a delivery
        that arrives late cancels its own runs, not the newer ones. The runs cancelled."""
        if trigger.pull_request is None:
            return []
        wanted = set(models)
        entries = [
            e
            for e in self.pull_requests.runs(trigger.repo, trigger.pull_request)
            if e.model in wanted
        ]
        cancelled = []
        for model in sorted(wanted):
            runs = [e for e in entries if e.model == model]
            if not runs:
                continue
            newest = max(runs, key=lambda e: (e.updated_at, e.created_at, e.run_id))
            for entry in runs:
                if entry.sha != newest.sha and self._cancel(entry.run_id, newest.sha):
                    cancelled.append(entry.run_id)
        return cancelled

    def _cancel(self, run_id: str, by_sha: str) -> bool:
        reason = f"cancelled: superseded by {by_sha[:10]}"
        if not self.runs.cancel(run_id, reason, self.clock().isoformat(timespec="seconds")):
            return False  # finished, or cancelled already
        run = self.runs.get(run_id)
        if run is not None:
            self.statuses.post(run.spec, State.ERROR, reason)
        pending = [c for c in self.runs.configs(run_id) if c.state is ConfigState.PENDING]
        jobs = [c.job_id for c in pending if c.job_id is not None]
        stop_jobs(self.launcher, jobs, run_id, reason, self.count)
        self.count("RunsSuperseded")
        logger.info("run superseded", run_id=run_id, by=by_sha)
        return True

    def await_approval(self, waiting: NeedsApproval, label: str) -> list[str]:
        """Nothing runs: every suite of the repository says it needs approval, and a stale
        approval label comes off. The suites that said so."""
        trigger = waiting.trigger
        suites, _ = self.catalog.suites()
        names = [s.name for s in suites if s.runs_for(trigger.repo)]
        for name in names:
            self.statuses.post_for_suite(
                trigger, name, State.PENDING, approval_description(label), awaiting_approval=True
            )
        if waiting.stale_label:
            self.statuses.withdraw_approval(trigger, label)
        self.count("RunsAwaitingApproval", len(names))
        logger.info("runs await approval", reason=waiting.reason, suites=names, sha=trigger.sha)
        return names

    def _touched(self, suites: list[Suite], change: Change) -> tuple[list[Suite], list[Suite]]:
        """(suites the change concerns, suites whose `paths` it touches none of); the files
        are asked of GitHub once, and only when a suite has paths."""
        if all(s.paths is None for s in suites):
            return suites, []
        changed = change.changed_files()
        touched = [s for s in suites if s.touched_by(changed)]
        return touched, [s for s in suites if s not in touched]

    def report_skipped(self, trigger: Trigger, suites: Iterable[Suite]) -> None:
        """`success`, so that a required check does not block a change it does not concern."""
        for suite in suites:
            description = f"skipped: no change under {', '.join(suite.paths or ())}"
            self.statuses.post_for_suite(trigger, suite.name, State.SUCCESS, description)
            self.count("SuitesSkipped")
            logger.info("suite skipped: no change under its paths", suite=suite.name)

    def report_broken(self, trigger: Trigger, broken: Iterable[BrokenSuite]) -> None:
        """A suite that cannot be read gets an `error` status, not a silent skip."""
        for suite in broken:
            logger.error("suite not valid; not run", suite=suite.name, problem=suite.problem)
            self.count("SuitesInvalid")
            self.statuses.post_broken_suite(trigger, suite)

    def _never_submitted(self, run_id: str) -> list[str]:
        return [
            c.name
            for c in self.runs.configs(run_id)
            if c.job_id is None and c.state is ConfigState.PENDING
        ]

    def _submit(self, run: RunSpec, suite: Suite, only: Sequence[str] | None = None) -> None:
        """Plan and submit each config's job (``only``: just those configs)."""
        if self.launcher is None:
            raise LaunchError("no Batch launcher configured")
        try:
            fleet = self.fleet() if self.fleet is not None else None
        except LaunchError as exc:  # a stack parameter naming no instance type: no job runs
            logger.exception("compute environment unknown", run_id=run.run_id)
            for spec in run.configs:
                self._fail(run.run_id, spec.name, f"not submitted: {exc}")
            return
        manifest_keys = {c.name: self.keys.for_config(run.run_id, c.name) for c in run.configs}
        plans = plan_jobs(run, suite, self.store.bucket, manifest_keys, fleet)
        refused = [p.refusal for p in plans if p.refusal is not None]
        if refused:
            self._refuse(run, plans, refused[0])
            return
        for plan in plans:
            if only is not None and plan.config not in only:
                continue
            try:
                job_id, request = self.launcher.submit(plan)
            except LaunchError as exc:
                logger.exception("job not submitted", run_id=run.run_id, config=plan.config)
                self._fail(run.run_id, plan.config, str(exc))
                continue
            self.jobs.record(JobRecord(job_id, run.run_id, plan.config, request))
            self.runs.set_job(run.run_id, plan.config, job_id)
            logger.info("job submitted", run_id=run.run_id, config=plan.config, job_id=job_id)

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


def _admitted_runs(
    of_commit: Sequence[RunRecord], wanted: Sequence[str], previous: str | None
) -> tuple[list[str], Trigger | None]:
    """The suites of ``wanted`` a re-run may start, and the trigger they start with: that of
    the run re-requested (``previous``, when it is a run of this commit), else of the latest
    run of the commit among those suites; only suites that already ran with that trigger."""
    runs = sorted(of_commit, key=lambda r: r.created_at)
    if previous is not None:
        runs = [r for r in runs if previous in (r.first_run_id, r.run_id)]
    candidates = [r for r in runs if r.model in wanted]
    if not candidates:
        return [], None
    trigger = candidates[-1].trigger
    admitted = {r.model for r in candidates if r.trigger == trigger}
    return [name for name in wanted if name in admitted], trigger


def _paired_base(
    of_commit: Sequence[RunRecord], trigger: Trigger, suites: Sequence[str]
) -> str | None:
    """The base the repeated runs were paired with (one trigger: one base), so that a
    re-run of a paired run measures against the same commit without asking GitHub again."""
    bases = [
        r.spec.paired.base_sha
        for r in of_commit
        if r.trigger == trigger and r.model in suites and r.spec.paired is not None
    ]
    return bases[-1] if bases else None
