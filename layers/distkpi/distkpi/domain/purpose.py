"""What a run is for, and what that decides, in one table: the services ask the policy of a
run's purpose instead of reading its flags (a bisection id, a calibration, an attempt).

Adding a purpose is a member of Purpose, how a run is known to have it (purpose_of) and its
row in POLICIES; each service then treats it by that row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distkpi.domain.contracts import RunSpec
    from distkpi.domain.records import RunRecord


class Purpose(Enum):
    COMMIT = "commit"  # a delivery's run of a commit
    CONFIRMATION = "confirmation"  # a commit's next run, for the configs its first left in doubt
    CALIBRATION = "calibration"  # an A/A run of `distkpi calibrate`: noise, not a verdict
    BISECTION_STEP = "bisection step"  # a midpoint of a regression's bisection
    DIAGNOSIS = "diagnosis"  # a profiled pass of base and head after a run's regression


@dataclass(frozen=True)
class Policy:
    # a finisher may hand the configs in doubt to a confirmation run
    confirms: bool
    # published as a commit's result: history, series, report, alerts, GitHub's status;
    # else given to the bisector (a step's side)
    published: bool
    # a push's regression found by it starts a bisection
    bisects: bool
    # its paired looks are judged (else each look goes on: nothing is decided early)
    judges_looks: bool
    # a re-run of the commit repeats it, or waits for it while it is going
    repeated_by_rerun: bool
    # its status's context (and check run's name); a calibration's, which no branch
    # protection requires, never blocks or passes a merge
    context: str = "distkpi/{model}"
    # judged against its branch's history (a diagnosis job's run is not: its times are
    # profiled, and nothing it measured is a result)
    judged: bool = True


POLICIES: dict[Purpose, Policy] = {
    Purpose.COMMIT: Policy(True, True, True, True, True),
    Purpose.CONFIRMATION: Policy(True, True, True, True, True),
    Purpose.CALIBRATION: Policy(
        True, True, False, False, False, context="distkpi/{model}/calibration"
    ),
    Purpose.BISECTION_STEP: Policy(False, False, False, True, True),
    # its traces are reduced into the diagnosed run's folder; nothing about it is judged
    Purpose.DIAGNOSIS: Policy(False, False, False, False, False, judged=False),
}


def purpose_of(run: RunRecord) -> Purpose:
    if run.spec.diagnosis is not None:
        return Purpose.DIAGNOSIS
    if run.bisection is not None:
        return Purpose.BISECTION_STEP
    if run.spec.calibration:
        return Purpose.CALIBRATION
    if run.attempt > 1:
        return Purpose.CONFIRMATION
    return Purpose.COMMIT


def policy_of(run: RunRecord) -> Policy:
    return POLICIES[purpose_of(run)]


def policy_of_spec(spec: RunSpec) -> Policy:
    """What a run's spec alone says of its purpose, where no record is at hand (a status is
    posted from the spec): a calibration's, else a commit's. A spec knows no attempt or
    bisection, and neither changes what the spec decides (its status's context)."""
    return POLICIES[Purpose.CALIBRATION if spec.calibration else Purpose.COMMIT]
