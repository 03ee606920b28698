"""The services' logic on in-memory ports (tests/fakes.py): a delivery starts a run with a
job per config, nodes fan in to their config and configs to their run, the run is judged
and published once, GitHub down and overdue runs. No moto: what only AWS can show is in
tests/integration."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from distkpi.domain.commit_status import State
from distkpi.domain.layout import config_prefix, kpis_key, report_key
from distkpi.domain.records import ConfigState, RunStatus
from distkpi.domain.signing import sign
from distkpi.domain.webhook import Trigger, decide
from distkpi.services.deadlines import RunDeadlines
from distkpi.services.finish import RunFinisher
from distkpi.services.launch import Outcome, RunStarter
from distkpi.services.publish import Publisher
from distkpi.services.settle import ConfigSettler
from distkpi.services.statuses import StatusPublisher
from tests.conftest import trainer_log
from tests.fakes import (
    ROOT,
    Clock,
    Counts,
    FakeDeliveries,
    FakeGitHub,
    FakeHistory,
    FakeJobs,
    FakeLauncher,
    FakePullRequests,
    FakeRunFolders,
    FakeRuns,
)

THROUGHPUT = {"1x1": 120.0, "1x8": 720.0, "2x8-4ps": 1300.0, "4x8-8ps": 2400.0}


@dataclass
class Pipeline:
    """The services wired as entry/wiring.py wires them, on in-memory ports."""

    runs: FakeRuns = field(default_factory=FakeRuns)
    history: FakeHistory = field(default_factory=FakeHistory)
    jobs: FakeJobs = field(default_factory=FakeJobs)
    store: FakeRunFolders = field(default_factory=FakeRunFolders)
    launcher: FakeLauncher = field(default_factory=FakeLauncher)
    github: FakeGitHub = field(default_factory=FakeGitHub)
    clock: Clock = field(default_factory=Clock)
    counts: Counts = field(default_factory=Counts)

    def __post_init__(self) -> None:
        suite = ROOT / "infra" / "suites" / "resnet50.yaml"
        self.store.put_bytes(f"suites/{suite.name}", suite.read_bytes())
        self.statuses = StatusPublisher(self.github, lambda run: f"https://r/{run}", self.counts)
        self.publisher = Publisher(
            self.runs, self.history, self.store, self.statuses, self.counts, self.clock
        )
        finisher = RunFinisher(self.runs, self.history, self.publisher, self.clock)
        self.settler = ConfigSettler(self.runs, self.jobs, self.store, finisher, self.counts)
        self.starter = RunStarter(
            runs=self.runs,
            deliveries=FakeDeliveries(),
            jobs=self.jobs,
            pull_requests=FakePullRequests(),
            store=self.store,
            catalog=self.store,
            statuses=self.statuses,
            launcher=self.launcher,
            settler=lambda: self.settler,
            count=self.counts,
            clock=self.clock,
        )
        self.deadlines = RunDeadlines(
            self.runs, self.settler, self.launcher, 3600, self.counts, self.clock
        )

    def states(self) -> list[tuple[str, str]]:
        return [(s.state, s.description) for s in self.github.statuses]


def pushed(sha: str = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f") -> Trigger:
    recorded = json.loads((ROOT / "tests" / "events" / "push.json").read_text())["payload"]
    payload = copy.deepcopy(recorded)
    payload["after"] = sha
    trigger = decide("push", payload, ["develop"])
    assert isinstance(trigger, Trigger)
    return trigger


def report_node(
    pipeline: Pipeline, run_id: str, config: str, node: int, *, scale: float = 1.0
) -> None:
    """What `distkpi node` leaves: its log, then its manifest signed with the config's key."""
    spec = pipeline.runs.get(run_id)
    assert spec is not None
    cfg = spec.spec.config(config)
    role = "trainer" if node < cfg.trainers else "pserver"
    rank = node if role == "trainer" else node - cfg.trainers
    log = trainer_log(THROUGHPUT[config] * scale / cfg.trainers) if role == "trainer" else "ok\n"
    path = f"logs/{role}-{rank}.log"
    prefix = config_prefix(run_id, config)
    pipeline.store.put_bytes(prefix + path, log.encode())
    manifest: dict[str, Any] = {
        "schema": 1,
        "node": node,
        "exit_code": 0,
        "started_at": "2026-11-30T03:00:00Z",
        "finished_at": "2026-11-30T03:10:00Z",
        "files": [
            {
                "path": path,
                "role": role,
                "rank": rank,
                "kind": "log",
                "sha256": hashlib.sha256(log.encode()).hexdigest(),
            }
        ],
    }
    record = pipeline.runs.config(run_id, config)
    assert record is not None and record.manifest_key is not None
    signed = sign(record.manifest_key, manifest)
    pipeline.store.put_bytes(f"{prefix}node-{node}.json", json.dumps(signed).encode())
    pipeline.settler.on_node_manifest(run_id, config, node)


def report_all(pipeline: Pipeline, run_id: str, **scale: float) -> None:
    run = pipeline.runs.get(run_id)
    assert run is not None
    for cfg in run.spec.configs:
        for node in range(cfg.nodes):
            report_node(pipeline, run_id, cfg.name, node, scale=scale.get(cfg.name, 1.0))


def start(pipeline: Pipeline, delivery: str = "d-1", sha: str | None = None) -> str:
    started = pipeline.starter.handle_delivery(pushed(sha) if sha else pushed(), delivery)
    assert started.outcome is Outcome.STARTED
    (run_id,) = started.runs
    return run_id


def test_a_push_starts_one_run_with_a_job_per_config_and_says_pending() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    plans = sorted(p.config for p in pipeline.launcher.submitted.values())
    assert plans == ["1x1", "1x8", "2x8-4ps", "4x8-8ps"]
    assert all(c.job_id is not None for c in pipeline.runs.configs(run_id))
    assert pipeline.states() == [("pending", "running 4 config(s), up to 32 GPUs")]
    assert f"runs/{run_id}/run.json" in pipeline.store.objects


def test_the_same_delivery_twice_starts_nothing_more() -> None:
    pipeline = Pipeline()
    start(pipeline)
    again = pipeline.starter.handle_delivery(pushed(), "d-1")
    assert again.outcome is Outcome.DUPLICATE
    assert len(pipeline.launcher.submitted) == 4
    assert len(pipeline.github.statuses) == 1


def test_nodes_fan_in_and_the_run_is_published_once() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    report_all(pipeline, run_id)
    # a redelivered manifest event settles and publishes nothing twice
    pipeline.settler.on_node_manifest(run_id, "4x8-8ps", 0)
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE and run.published_at is not None
    assert [s for s, _ in pipeline.states()] == ["pending", "success"]
    assert pipeline.counts.totals["ConfigsCompleted"] == 4
    assert {
        r.config for r in pipeline.history.history("PaddlePaddle/Paddle", "develop", "resnet50")
    } == set(THROUGHPUT)
    kpis = json.loads(pipeline.store.objects[kpis_key(run_id)])
    assert {name: c["throughput"] for name, c in kpis["configs"].items()} == THROUGHPUT
    assert report_key(run_id) in pipeline.store.objects


def test_a_failed_job_fails_its_config_and_the_run_ends_in_error() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    failed = next(j for j, p in pipeline.launcher.submitted.items() if p.config == "2x8-4ps")
    assert pipeline.settler.on_job_failed(failed, "Essential container in task exited")
    for config in ("1x1", "1x8", "4x8-8ps"):
        run = pipeline.runs.get(run_id)
        assert run is not None
        for node in range(run.spec.config(config).nodes):
            report_node(pipeline, run_id, config, node)
    record = pipeline.runs.config(run_id, "2x8-4ps")
    assert record is not None and record.state is ConfigState.FAILED
    assert record.kpis is not None
    assert record.kpis.problems[0] == "job failed: Essential container in task exited"
    assert pipeline.states()[-1][0] == "error"


def test_a_job_batch_refuses_fails_its_config_and_the_others_still_run() -> None:
    pipeline = Pipeline()
    pipeline.launcher.refuse = {"4x8-8ps"}
    run_id = start(pipeline)
    assert sorted(p.config for p in pipeline.launcher.submitted.values()) == [
        "1x1",
        "1x8",
        "2x8-4ps",
    ]
    record = pipeline.runs.config(run_id, "4x8-8ps")
    assert record is not None and record.state is ConfigState.FAILED
    assert record.kpis is not None
    assert "Batch refused the job of 4x8-8ps" in record.kpis.problems[0]


def test_while_github_is_down_the_run_waits_and_the_sweep_publishes_it_once() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    pipeline.github.down = True
    report_all(pipeline, run_id)
    assert pipeline.runs.unpublished() == [run_id]
    pipeline.github.down = False
    pipeline.clock.advance(600)  # the sweeper, ten minutes on
    assert pipeline.publisher.republish_unpublished() == 1
    assert pipeline.publisher.republish_unpublished() == 0
    assert [s for s, _ in pipeline.states()] == ["pending", "success"]


def test_an_overdue_run_is_settled_as_it_stands_and_its_jobs_stopped() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)
    report_node(pipeline, run_id, "1x1", 0)
    pipeline.clock.advance(3601)
    assert pipeline.deadlines.expire_overdue() == 1
    run = pipeline.runs.get(run_id)
    assert run is not None and run.status is RunStatus.DONE
    stopped = {pipeline.launcher.submitted[j].config for j in pipeline.launcher.terminated}
    assert stopped == {"1x8", "2x8-4ps", "4x8-8ps"}
    assert set(pipeline.launcher.terminated.values()) == {
        "timed out: no result 1h after the run started"
    }
    assert pipeline.states()[-1][0] == State.ERROR.value


def test_a_push_30_percent_slower_than_its_history_fails_naming_the_config() -> None:
    pipeline = Pipeline()
    for i in range(6):
        sha = f"{i + 1:x}" * 40
        report_all(pipeline, start(pipeline, f"d-{i}", sha))
    report_all(pipeline, start(pipeline, "d-slow", "f" * 40), **{"4x8-8ps": 0.7})
    state, description = pipeline.states()[-1]
    assert state == "failure"
    assert description == (
        "32 GPUs 14.0x (-30%), eff 0.44, TTA 240s, acc Δ0.0000: "
        "4x8-8ps tput -30%; 4x8-8ps speedup -30%; 4x8-8ps eff -30%"
    )
