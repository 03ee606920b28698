"""The webhook's and the finisher's way in to starting runs, one part per use case: a
delivery (delivery.py), a re-run (rerun.py), a calibration (calibrate.py), the follow-ups
of a finished run (follow_ups.py: confirmation, bisection step) and the superseding of a
pull request's older runs (supersede.py); each plans and records its runs through one
RunLauncher (run_launcher.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distkpi.domain.planning.sizing import Fleet
from distkpi.domain.signing import ManifestKeys
from distkpi.services.calibrate import Calibrations
from distkpi.services.delivery import DeliveryStarter
from distkpi.services.follow_ups import FollowUps
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
from distkpi.services.rerun import Reruns
from distkpi.services.run_launcher import Delivery, Outcome, RunLauncher
from distkpi.services.statuses import StatusPublisher
from distkpi.services.supersede import Superseder

if TYPE_CHECKING:
    from distkpi.services.settle import ConfigSettler

__all__ = ["Delivery", "Outcome", "RunStarter"]


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

    def __post_init__(self) -> None:
        launcher = RunLauncher(
            self.runs,
            self.jobs,
            self.pull_requests,
            self.store,
            self.statuses,
            self.launcher,
            self.keys,
            settler=self.settler,
            fleet=self.fleet,
            count=self.count,
            clock=self.clock,
        )
        self.superseder = Superseder(
            self.runs, self.pull_requests, self.statuses, launcher, self.count
        )
        self.delivery = DeliveryStarter(
            self.deliveries,
            self.catalog,
            self.statuses,
            launcher,
            self.superseder if self.cancel_superseded else None,
            self.count,
        )
        self.reruns = Reruns(self.runs, self.catalog, self.statuses, self.delivery, self.count)
        self.calibrations = Calibrations(self.deliveries, self.catalog, launcher, self.count)
        self.follow_ups = FollowUps(self.catalog, launcher, self.count)
        self.handle_delivery = self.delivery.handle
        self.await_approval = self.delivery.await_approval
        self.rerun = self.reruns.rerun
        self.calibrate = self.calibrations.calibrate
        self.confirm = self.follow_ups.confirm
        self.start_step = self.follow_ups.start_step
        self.cancel_step = self.follow_ups.cancel_step
        self.supersede = self.superseder.supersede
