"""A finished run's results go out once, as they were stored: its history records, kpis.json,
the report and the final commit status, by the one holder of the publication lease. A
publication is a list of steps (Publisher.commit_steps, step_steps), each idempotent, each
with its failure policy (OnFailure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.paired import first_pair_d
from distkpi.domain.judging.statistics import Judgement
from distkpi.domain.kpis.engine import ConfigStatus
from distkpi.domain.kpis.runfolder import RunSource, stored_diagnoses, with_diagnoses
from distkpi.domain.layout import kpis_key, report_key
from distkpi.domain.purpose import Purpose, policy_of, purpose_of
from distkpi.domain.records import HistoryRecord, RunRecord, SeriesRecord
from distkpi.exceptions import ConflictError, StorageError
from distkpi.services.alerts import RegressionAlerts
from distkpi.services.baseline import baseline_of
from distkpi.services.bisect import Bisector
from distkpi.services.diagnosis import Diagnoser
from distkpi.services.ports import Clock, Counter, History, RunFolders, Runs, no_metrics, utcnow
from distkpi.services.pr_comments import PullRequestComments
from distkpi.services.statuses import StatusPublisher

if TYPE_CHECKING:
    from distkpi.services.site import SitePublisher

logger = Logger(child=True)

# a finished run's report files (name -> bytes), drawn against the history it was judged
# by, with each failed config's logs (paths in the run folder) and each diagnosed config's
# diagnosis (as stored)
Diagnoses = Mapping[str, Mapping[str, Any]]
DrawReport = Callable[
    [RunRecord, Sequence[HistoryRow], Mapping[str, Sequence[str]], Diagnoses], dict[str, bytes]
]


def draw_report(
    run: RunRecord,
    history: Sequence[HistoryRow],
    logs: Mapping[str, Sequence[str]],
    diagnoses: Diagnoses,
) -> dict[str, bytes]:
    """index.html and its charts (reporting/page.py)."""
    from distkpi.reporting.page import build_report  # matplotlib: only when a run ends

    return build_report(run, history, logs, diagnoses)


def failed_logs(source: RunSource, run: RunRecord) -> dict[str, list[str]]:
    """Each failed config's log files as paths in the run folder (<config>/logs/*.log)."""
    configs = run.evaluation.kpis.configs if run.evaluation else ()
    return {
        c.name: [
            f"{c.name}/logs/{n}" for n in source.list_names(f"{c.name}/logs") if n.endswith(".log")
        ]
        for c in configs
        if c.status is not ConfigStatus.OK
    }


class OnFailure(Enum):
    RAISE = "raise"  # the lease expires; the next publisher (the sweeper) redoes every step
    RELEASE_AND_RAISE = "release and raise"  # the lease is given back at once, then raise
    RETRY_LATER = "retry later"  # not done (False, or a retried error): lease given back
    GO_ON = "go on"  # the step says what failed itself; the next steps run


@dataclass(frozen=True)
class Step:
    """One thing a publication does: idempotent (a publisher that dies before the end
    leaves every step to be done again), and what its failure means."""

    name: str
    do: Callable[[Publication], bool | None]  # False: not done now
    on_failure: OnFailure
    retried: tuple[type[Exception], ...] = (Exception,)  # the errors its policy is for


@dataclass
class Publication:
    """A run being published, and what its steps have found so far."""

    run: RunRecord
    evaluation: Evaluation
    baseline: Sequence[HistoryRow] | None
    report_written: bool = False


@dataclass
class Publisher:
    runs: Runs
    history: History
    store: RunFolders
    statuses: StatusPublisher
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)
    alerts: RegressionAlerts | None = None  # a stack with a regression topic
    bisector: Bisector | None = None  # a stack that submits jobs: bisects regressions
    draw: DrawReport = draw_report
    site: SitePublisher | None = None  # a stack with a bucket: the history site's files
    comments: PullRequestComments | None = None  # a pull request's comment per suite
    # a stack that submits jobs: starts a finished run's diagnosis job (FollowUps.diagnose)
    diagnose: Callable[[RunRecord, Sequence[Judgement]], str | None] | None = None
    # reduces a finished diagnosis job's traces into the run it diagnoses
    diagnoser: Diagnoser | None = None

    def publish(self, run: RunRecord, baseline: Sequence[HistoryRow] | None = None) -> bool:
        """Publish a finished run's stored evaluation (its report drawn against ``baseline``,
        read again when not given): the steps of its purpose in order, each idempotent, each
        failing by its policy. A publisher that dies leaves its lease to expire; the next
        one redoes all of it."""
        if run.evaluation is None:
            raise ValueError(f"run {run.run_id} has no evaluation to publish")
        now = int(self.clock().timestamp())
        if not self.runs.claim_publication(run.run_id, now):
            return False
        publication = Publication(run, run.evaluation, baseline)
        steps = self.commit_steps if policy_of(run).published else self.step_steps
        if purpose_of(run) is Purpose.DIAGNOSIS:
            steps = self.diagnosis_steps
        for step in steps:
            if not self._take(step, publication):
                self.runs.release_publication(run.run_id)
                return False
        self.runs.mark_published(run.run_id, now)
        return True

    @property
    def commit_steps(self) -> list[Step]:
        """A commit's result: its history, kpis.json, the report, the team's alert before
        GitHub (which may be down), the history site's files (after the alert, so that the
        regressions it opened are listed), the bisection of a push's
        regression, the pull request's comment (before the status, so that GitHub being down
        redoes both), the status (or check run: the stack's reporter)."""
        return [
            Step("history", self._history, OnFailure.RAISE),
            Step("kpis", self._kpis, OnFailure.RAISE),
            Step("report", self._report, OnFailure.GO_ON),
            Step("alerts", self._alert, OnFailure.RETRY_LATER, retried=(StorageError,)),
            Step(
                "history site",
                self._site,
                OnFailure.RETRY_LATER,
                retried=(StorageError, ConflictError),
            ),
            Step("bisection", self._bisect, OnFailure.GO_ON),
            Step("pull request comment", self._comment, OnFailure.GO_ON),
            Step("diagnosis job", self._start_diagnosis, OnFailure.GO_ON),
            Step(self.statuses.reporter.step, self._status, OnFailure.RETRY_LATER, retried=()),
        ]

    @property
    def step_steps(self) -> list[Step]:
        """A bisection's step joins no history and posts no status: its kpis.json and report
        are written, and its bisection moves on (a failure leaves it to the sweeper)."""
        return [
            Step("kpis", self._kpis, OnFailure.RAISE),
            Step("report", self._report, OnFailure.GO_ON),
            Step("bisection step", self._step_finished, OnFailure.RELEASE_AND_RAISE),
        ]

    @property
    def diagnosis_steps(self) -> list[Step]:
        """A diagnosis job's run joins no history and posts no status of its own: its
        kpis.json is written (its GPU-hours), then its traces are reduced into the run it
        diagnoses."""
        return [
            Step("kpis", self._kpis, OnFailure.RAISE),
            Step("diagnosis", self._diagnosed, OnFailure.RAISE),
            Step("diagnosis told", self._diagnosis_told, OnFailure.GO_ON),
        ]

    def _take(self, step: Step, publication: Publication) -> bool:
        """Whether the publication goes on after ``step``."""
        run_id = publication.run.run_id
        try:
            return step.do(publication) is not False
        except step.retried:
            if step.on_failure is OnFailure.RETRY_LATER:
                return False
            if step.on_failure is OnFailure.GO_ON:
                logger.exception(f"{step.name} failed", run_id=run_id)
                return True
            if step.on_failure is OnFailure.RELEASE_AND_RAISE:
                self.runs.release_publication(run_id)
            raise

    def _history(self, p: Publication) -> None:
        self.history.put(history_records(p.run, p.evaluation))
        self.history.record_series(series_record(p.run, p.evaluation))

    def _kpis(self, p: Publication) -> None:
        """kpis.json, with the diagnoses a diagnosis job stored already (a publication done
        again after them keeps them)."""
        names = [c.name for c in p.run.spec.configs]
        diagnoses = stored_diagnoses(self.store.run(p.run.run_id), names)
        out = with_diagnoses(p.evaluation.kpis.to_json(), diagnoses)
        self.store.put_json(kpis_key(p.run.run_id), out)

    def _report(self, p: Publication) -> None:
        p.report_written = self._write_report(p.run, p.baseline)

    def _site(self, p: Publication) -> None:
        """The run's points into the history site's files (a published branch's run); the
        bucket refusing leaves the run to the sweeper, which publishes it again; any other
        failure is logged and counted, and the publication goes on."""
        if self.site is None:
            return
        try:
            self.site.publish(p.run, p.evaluation, history_records(p.run, p.evaluation))
        except (StorageError, ConflictError):
            raise
        except Exception:  # the site is a view: a fault of its own never holds the status
            logger.exception("history site not updated", run_id=p.run.run_id)
            self.count("SiteFailures")

    def _alert(self, p: Publication) -> None:
        """Tell the team of a regression before GitHub; a topic that refuses (StorageError)
        leaves the run to the sweeper, which publishes it again, alert first."""
        if self.alerts is not None:
            self.alerts.after(p.run)

    def _bisect(self, p: Publication) -> None:
        """Start the bisection of a push's regression; a failure is logged and counted, and
        the status still goes out."""
        if self.bisector is None:
            return
        try:
            self.bisector.after_push(p.run)
        except Exception:
            logger.exception("bisection not started", run_id=p.run.run_id)
            self.count("BisectionFailures")

    def _comment(self, p: Publication) -> None:
        """The pull request's comment; it logs and counts its own failure."""
        if self.comments is not None:
            self.comments.after(p.run, report=p.report_written)

    def _start_diagnosis(self, p: Publication) -> None:
        """Start the diagnosis job of the run's regressed configs (the suite's `diagnose:`);
        a failure is logged and counted, and the status still goes out."""
        if self.diagnose is None:
            return
        try:
            self.diagnose(p.run, p.evaluation.judgements)
        except Exception:
            logger.exception("diagnosis job not started", run_id=p.run.run_id)
            self.count("DiagnosisFailures")

    def _diagnosed(self, p: Publication) -> None:
        if self.diagnoser is not None:
            self.diagnoser.finished(p.run)

    def _diagnosis_told(self, p: Publication) -> None:
        """The diagnosed run's report drawn again with its diagnoses, its check run's
        summary and (a push's regression) its alert with one line each."""
        assert p.run.spec.diagnosis is not None
        of = self.runs.get(p.run.spec.diagnosis.of_run)
        if of is None or of.evaluation is None:
            return
        from distkpi.domain.planning.diagnosis import regressed_timing
        from distkpi.services.check_sections import stored_diagnosis_lines

        self._write_report(of, None)
        lines = stored_diagnosis_lines(self.store, of)
        self.statuses.diagnosed(of, lines)
        if self.comments is not None:
            self.comments.after(of, report=True, diagnoses=lines)
        if self.alerts is not None and regressed_timing(of.evaluation.judgements):
            self.alerts.diagnosed(of, lines)

    def _status(self, p: Publication) -> bool:
        """The verdict; a run accepted before its status went out (GitHub was down) says
        it was accepted, as services/accept.py posted it."""
        if p.run.accepted is not None:
            return self.statuses.accepted(p.run, p.report_written)
        verdict = p.evaluation.verdict
        return self.statuses.post(
            p.run.spec,
            verdict.state,
            p.evaluation.description,
            report=p.report_written,
            evaluation=p.evaluation,
            acceptable=p.run.verdict_settings.acceptable,
        )

    def _step_finished(self, p: Publication) -> None:
        if self.bisector is not None:
            self.bisector.step_finished(p.run)

    def republish_unpublished(self) -> int:
        """Publish the runs that finished while GitHub was down; how many went out now."""
        posted = 0
        for run_id in self.runs.unpublished():
            try:
                posted += self._republish(run_id)
            except Exception:  # one broken run must not keep the others' statuses back
                logger.exception("status not republished", run_id=run_id)
                self.count("SweepFailures")
        return posted

    def _republish(self, run_id: str) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.evaluation is None or not self.publish(run):
            return False
        logger.info("status republished", run_id=run_id)
        return True

    def report_files(
        self, run: RunRecord, baseline: Sequence[HistoryRow] | None = None
    ) -> dict[str, bytes]:
        """The run's report, drawn against the history it was judged against."""
        rows = baseline if baseline is not None else baseline_of(self.history, run).rows
        source = self.store.run(run.run_id)
        return self.draw(
            run,
            rows,
            failed_logs(source, run),
            stored_diagnoses(source, [c.name for c in run.spec.configs]),
        )

    def _write_report(self, run: RunRecord, baseline: Sequence[HistoryRow] | None) -> bool:
        """reports/<run_id>/: a report that cannot be drawn is logged and counted, and the
        status still goes out, without the link."""
        try:
            files = self.report_files(run, baseline)
        except Exception:
            logger.exception("report not written", run_id=run.run_id)
            self.count("ReportFailures")
            return False
        for name, data in files.items():
            kind = "text/html; charset=utf-8" if name.endswith(".html") else "image/png"
            self.store.put_bytes(report_key(run.run_id, name), data, kind)
        return True


def series_record(run: RunRecord, evaluation: Evaluation) -> SeriesRecord:
    return SeriesRecord(
        run.trigger.repo,
        run.history_branch,
        run.model,
        run.run_id,
        evaluation.verdict.state.value,
        evaluation.description,
        run.finished_at or "",
    )


def history_records(run: RunRecord, evaluation: Evaluation) -> list[HistoryRecord]:
    """One record per config, finished when the run did, under the branch whose history the
    run joins (a pull request's own, never its head branch's), with how each KPI was judged."""
    judged: dict[str, dict[str, dict[str, Any]]] = {}
    for j in evaluation.judgements:
        judged.setdefault(j.config, {})[j.kpi] = {
            "low": j.low,
            "high": j.high,
            "verdict": j.verdict.value,
        }
    base = next((c for c in evaluation.kpis.configs if c.name == evaluation.kpis.base_config), None)
    return [
        HistoryRecord(
            repo=run.trigger.repo,
            branch=run.history_branch,
            model=run.model,
            config=c.name,
            sha=run.trigger.sha,
            run_id=run.run_id,
            created_at=run.created_at,
            finished_at=run.finished_at or "",
            kpis=c,
            judged=judged.get(c.name, {}),
            paired=first_pair_d(c, base) if c.pairs else {},
            calibration=run.spec.calibration,
            verdict=evaluation.verdict.state.value,
        )
        for c in evaluation.kpis.configs
    ]
