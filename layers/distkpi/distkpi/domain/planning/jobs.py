"""From a trigger and a suite to a run: its id, its run.json and one Batch job per config."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from distkpi.domain.accuracy import target_text
from distkpi.domain.contracts import (
    TRAINING_FIELDS,
    ConfigSpec,
    DiagnosisRun,
    PairedRun,
    RunSpec,
)
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.judging.settings import PairedSettings
from distkpi.domain.layout import config_prefix
from distkpi.domain.parse_settings import settings_json
from distkpi.domain.planning.jobenv import JobEnvironment, PairedVariables
from distkpi.domain.planning.sizing import Fleet, NodeRequest, Refusal, place
from distkpi.domain.planning.suites import Suite

# every node of every job runs the node runner, which runs the suite's command
NODE_ENTRYPOINT = ("distkpi", "node")


def _of_delivery(suite: str, delivery: str) -> str:
    return hashlib.sha256(f"{delivery}\0{suite}".encode()).hexdigest()[:8]


def run_id_for(suite: str, sha: str, delivery: str) -> str:
    """Stable for one delivery and suite, so a retried delivery names the same run."""
    return f"{suite}-{sha[:10]}-{_of_delivery(suite, delivery)}"


def calibration_run_id(suite: str, sha: str, delivery: str, job: int) -> str:
    """The ``job``'th A/A run a calibration delivery starts: the same name on a redelivery."""
    return f"{suite}-{sha[:10]}-cal{job}-{_of_delivery(suite, delivery)}"


# how an unpaired suite's calibration jobs run: two pairs after a warm-up
CALIBRATION_PAIRS = PairedSettings(max_pairs=2, warmup=True)


def calibration_suite(suite: Suite) -> Suite | str:
    """The suite as its A/A jobs run it, paired (its own pairs, else CALIBRATION_PAIRS) and
    never confirming; or why its jobs cannot be paired."""
    why = suite.why_not_paired()
    if why is not None:
        return f"suite {suite.name} cannot be calibrated: {why}"
    paired = suite.verdict.paired or CALIBRATION_PAIRS
    verdict = suite.verdict.model_copy(update={"paired": paired, "confirm": None})
    return suite.model_copy(update={"verdict": verdict})


def confirmation_run_id(first_run_id: str, attempt: int) -> str:
    """The attempt'th run of a commit, confirming its first: one name, whoever starts it."""
    return f"{first_run_id}-r{attempt}"


def confirmation_spec(first: RunSpec, run_id: str, configs: Iterable[str]) -> RunSpec:
    """The first run's spec for another run of only the given configs."""
    wanted = set(configs)
    kept = tuple(c for c in first.configs if c.name in wanted)
    return first.model_copy(update={"run_id": run_id, "configs": kept})


def run_spec_for(
    run_id: str,
    trigger: Trigger,
    suite: Suite,
    base_sha: str | None = None,
    *,
    calibration: bool = False,
) -> RunSpec:
    """The run's run.json; with ``base_sha`` (a paired suite's arm A), a paired run; a
    ``calibration`` one measures the trigger's commit in both arms."""
    paired = suite.verdict.paired
    if calibration:
        base_sha = trigger.sha
    return RunSpec.model_validate(
        {
            "schema": 1,
            "run_id": run_id,
            "repo": trigger.repo,
            "sha": trigger.sha,
            "ref": trigger.ref,
            "model": suite.name,
            "target_accuracy": suite.target_accuracy,
            "accuracy_pass": suite.accuracy_pass,
            "accuracy_tolerance": suite.accuracy_tolerance,
            "accuracy_direction": suite.accuracy_direction,
            "warmup_reports": suite.warmup_reports,
            "metrics": suite.metrics,
            **{field: getattr(suite, field) for field in TRAINING_FIELDS},
            "configs": [c.model_dump() for c in suite.specs()],
            "paired": (
                {
                    "base_sha": base_sha,
                    "max_pairs": paired.max_pairs,
                    "warmup": paired.warmup,
                    "calibration": calibration,
                }
                if paired is not None and base_sha is not None
                else None
            ),
        }
    )


def _parse_settings(run: RunSpec) -> str | None:
    """DISTKPI_PARSE_SETTINGS: how the node summarises the run's logs, where the suite reads
    them its own way (else the node's defaults are the run's)."""
    data = settings_json(run.accuracy_direction, run.warmup_reports, run.metrics)
    return None if data is None else json.dumps(data, sort_keys=True)


def diagnosis_run_id(run_id: str, *, culprit: bool = False) -> str:
    """The diagnosis job's run of ``run_id`` (of its bisection's culprit): one name,
    whoever starts it."""
    return f"{run_id}-dc" if culprit else f"{run_id}-d"


def diagnosis_spec(
    run: RunSpec,
    run_id: str,
    configs: Iterable[str],
    base_sha: str,
    steps: int,
    *,
    culprit: str | None = None,
) -> RunSpec:
    """``run``'s configs as a diagnosis job runs them: one pair, the base then the head (the
    run's commit), no warm-up run (the profiler's schedule has its own warm-up steps), each
    profiled for ``steps`` steps. With ``culprit``, that commit is the head (a bisection's
    culprit, against its parent as ``base_sha``)."""
    spec = confirmation_spec(run, run_id, configs)
    return spec.model_copy(
        update={
            "sha": culprit or run.sha,
            "paired": PairedRun(base_sha=base_sha, max_pairs=1, warmup=False),
            "diagnosis": DiagnosisRun(of_run=run.run_id, steps=steps, culprit=culprit is not None),
        }
    )


def command_runs(paired: PairedRun | None) -> int:
    """How often a job may run the suite's command: once, or a paired job's warm-up and the
    two runs of each pair."""
    if paired is None:
        return 1
    return int(paired.warmup) + 2 * paired.max_pairs


# what the job definitions leave a job beyond the default command timeout (an attempt of
# 14400 s, a command of 7200 s): checkouts, setup, rendezvous and uploads
JOB_MARGIN_S = 7200


def job_timeout_s(run: RunSpec, suite: Suite) -> int | None:
    """A paired job's Batch attempt duration: every run of the command it may make at the
    suite's `command_timeout_s`, and the margin; None: the job definition's (one run)."""
    if run.paired is None:
        return None
    return command_runs(run.paired) * suite.command_timeout_s + JOB_MARGIN_S


def extra_run_time_s(run: RunSpec, suite: Suite) -> int:
    """How much longer than the stack's run timeout the run may take: the runs of the
    command a paired job makes after its first."""
    return (command_runs(run.paired) - 1) * suite.command_timeout_s


@dataclass(frozen=True)
class NodeGroup:
    """Nodes first..last (inclusive) of a multi-node job, all of one role."""

    first: int
    last: int
    role: str
    request: NodeRequest | None = None  # None: the job definition's resources

    @property
    def target(self) -> str:
        return f"{self.first}:{self.last}"


@dataclass(frozen=True)
class JobPlan:
    name: str
    run_id: str
    config: str
    nodes: int
    environment: dict[str, str]
    command: tuple[str, ...] = ()
    groups: tuple[NodeGroup, ...] = field(default=())
    image: str | None = None  # None: the job definition's
    timeout_s: int | None = None  # the attempt's duration; None: the job definition's
    # why the config can never be placed; such a plan is never submitted
    refusal: str | None = None
    # its repository's share of a fair-share job queue (`share_identifier`)
    share: str | None = None

    @property
    def multinode(self) -> bool:
        return self.nodes > 1

    @property
    def gpus(self) -> int:
        """The GPUs its nodes ask for, all together."""
        return sum(
            (g.last - g.first + 1) * g.request.gpus for g in self.groups if g.request is not None
        )


def share_identifier(repo: str) -> str:
    """A repository's share of the job queue's fair-share policy: Batch takes letters,
    digits and underscores (at most 255), so `owner/name` becomes `owner_name`."""
    return re.sub(r"[^A-Za-z0-9_]", "_", repo)[:255]


def job_name(run_id: str, config: str) -> str:
    """Batch job names allow letters, digits, hyphens and underscores, 128 at most."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"distkpi-{run_id}-{config}")[:128]


def node_groups(
    spec: ConfigSpec, trainer: NodeRequest | None = None, pserver: NodeRequest | None = None
) -> tuple[NodeGroup, ...]:
    groups = [NodeGroup(0, spec.trainers - 1, "trainer", trainer)]
    if spec.pservers:
        groups.append(NodeGroup(spec.trainers, spec.nodes - 1, "pserver", pserver))
    return tuple(groups)


def plan_jobs(
    run: RunSpec,
    suite: Suite,
    bucket: str,
    manifest_keys: Mapping[str, str] | None = None,
    fleet: Fleet | None = None,
) -> list[JobPlan]:
    """One job per config; each gets its own config's manifest key, and no other's. With a
    fleet, each node asks for its role's resources, and a config that can never be placed
    in it carries the refusal instead."""
    plans = []
    parse_settings = _parse_settings(run)
    for spec in run.configs:
        groups, refusal = node_groups(spec), None
        if fleet is not None:
            placed = place(spec, fleet, suite.resources, suite.pserver)
            if isinstance(placed, Refusal):
                refusal = f"{placed.reason} (suite {suite.where or suite.name})"
            else:
                groups = node_groups(spec, placed.trainer, placed.pserver)
        environment = JobEnvironment(
            run_id=run.run_id,
            config=spec.name,
            s3_prefix=f"s3://{bucket}/{config_prefix(run.run_id, spec.name)}",
            repo=run.repo,
            sha=run.sha,
            model=run.model,
            trainers=spec.trainers,
            gpus_per_trainer=spec.gpus_per_trainer,
            pservers=spec.pservers,
            batch_size=spec.batch_size,
            target_accuracy=target_text(run.target_accuracy),
            source_url=suite.source_url(run.repo),
            setup=suite.setup,
            command=suite.command,
            command_timeout_s=suite.command_timeout_s,
            layout=spec.layout,  # its parallel layout, where the suite states it: DISTKPI_TP
            golden=suite.golden,  # the main node uploads it from the checkout
            # else the job runs its own number of passes
            epochs=None if run.accuracy_pass is None else run.accuracy_pass + 1,
            paired=None
            if run.paired is None
            else PairedVariables(run.paired.base_sha, run.paired.max_pairs, run.paired.warmup),
            profile_steps=None if run.diagnosis is None else run.diagnosis.steps,
            manifest_key=(manifest_keys or {}).get(spec.name),
            parse_settings=parse_settings,
        ).variables()
        plans.append(
            JobPlan(
                name=job_name(run.run_id, spec.name),
                run_id=run.run_id,
                config=spec.name,
                nodes=spec.nodes,
                environment=environment,
                command=NODE_ENTRYPOINT,
                groups=groups,
                image=suite.image_for(run.sha),
                timeout_s=job_timeout_s(run, suite),
                refusal=refusal,
                share=share_identifier(run.repo),
            )
        )
    return plans
