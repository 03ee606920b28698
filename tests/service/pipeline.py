"""The services wired as entry/wiring.py wires them, on the in-memory ports of
tests/fakes.py, and what a job's nodes leave in the run folder."""

from __future__ import annotations

import copy
import io
import json
from dataclasses import dataclass, field
from typing import Any

from distkpi.domain.github.webhook import Trigger, decide, parse
from distkpi.domain.layout import config_prefix
from distkpi.domain.logs.filesummary import ENGINE_VERSION
from distkpi.domain.signing import ManifestKeys, sign
from distkpi.services.alerts import RegressionAlerts
from distkpi.services.bisect import Bisector
from distkpi.services.deadlines import RunDeadlines
from distkpi.services.finish import RunFinisher
from distkpi.services.launch import Outcome, RunStarter
from distkpi.services.publish import DrawReport, Publisher, draw_report
from distkpi.services.settle import ConfigSettler
from distkpi.services.statuses import StatusPublisher
from distkpi_cli.node.summaries import describe
from tests.conftest import trainer_log
from tests.fakes import (
    ROOT,
    Clock,
    Counts,
    FakeAlarms,
    FakeBisections,
    FakeDeliveries,
    FakeGitHub,
    FakeHistory,
    FakeJobs,
    FakeLauncher,
    FakePullRequests,
    FakeRunFolders,
    FakeRuns,
    FakeTopic,
)

THROUGHPUT = {"1x1": 120.0, "1x8": 720.0, "2x8-4ps": 1300.0, "4x8-8ps": 2400.0}
GPU_SAMPLES = "timestamp, index, memory.used [MiB]\n2026/11/30 00:00:00.000, 0, 12000 MiB\n"


def report_url(run_id: str) -> str:
    return f"https://distkpi.example.com/reports/{run_id}/index.html"


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
    checks: bool = False  # signed in as a GitHub App: check runs instead of statuses
    alarms: FakeAlarms = field(default_factory=FakeAlarms)
    topic: FakeTopic = field(default_factory=FakeTopic)
    bisections: FakeBisections = field(default_factory=FakeBisections)
    # each config's key, from a master secret as the stack's
    keys: ManifestKeys = field(default_factory=lambda: ManifestKeys(lambda: "master secret"))
    draw: DrawReport = draw_report  # the real report; tests/fakes.py's plain_report: none

    def __post_init__(self) -> None:
        suite = ROOT / "infra" / "suites" / "resnet50.yaml"
        self.store.put_bytes(f"suites/{suite.name}", suite.read_bytes())
        self.statuses = StatusPublisher(
            self.github, report_url, self.counts, self.checks, "https://github.com"
        )
        alerts = RegressionAlerts(self.alarms, self.topic, report_url, count=self.counts)
        self.publisher = Publisher(
            self.runs,
            self.history,
            self.store,
            self.statuses,
            self.counts,
            self.clock,
            alerts,
            draw=self.draw,
        )
        finisher = RunFinisher(self.runs, self.history, self.publisher, self.clock)
        self.settler = ConfigSettler(
            self.runs, self.jobs, self.store, finisher, self.keys, count=self.counts
        )
        self.starter = RunStarter(
            runs=self.runs,
            deliveries=FakeDeliveries(),
            jobs=self.jobs,
            pull_requests=FakePullRequests(),
            store=self.store,
            catalog=self.store,
            statuses=self.statuses,
            launcher=self.launcher,
            keys=self.keys,
            settler=lambda: self.settler,
            count=self.counts,
            clock=self.clock,
        )
        self.bisector = Bisector(
            self.runs,
            self.bisections,
            self.alarms,
            self.history,
            self.statuses,
            self.store,
            self.starter.start_step,
            self.starter.cancel_step,
            alerts,
            count=self.counts,
            clock=self.clock,
        )
        self.publisher.bisector = self.bisector
        self.deadlines = RunDeadlines(
            self.runs, self.settler, self.launcher, 3600, self.counts, self.clock
        )

    def states(self) -> list[tuple[str, str]]:
        return [(s.state, s.description) for s in self.github.statuses]


def pushed(sha: str = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f") -> Trigger:
    recorded = json.loads((ROOT / "tests" / "events" / "push.json").read_text())["payload"]
    payload = copy.deepcopy(recorded)
    payload["after"] = sha
    trigger = decide(parse("push", payload), ["develop"])
    assert isinstance(trigger, Trigger)
    return trigger


def report_node(
    pipeline: Pipeline, run_id: str, config: str, node: int, *, scale: float = 1.0
) -> None:
    """What `distkpi node` leaves: its log and GPU samples, then its manifest with each
    file's digest and summary, signed with the config's key."""
    spec = pipeline.runs.get(run_id)
    assert spec is not None
    cfg = spec.spec.config(config)
    role = "trainer" if node < cfg.trainers else "pserver"
    rank = node if role == "trainer" else node - cfg.trainers
    log = trainer_log(THROUGHPUT[config] * scale / cfg.trainers) if role == "trainer" else "ok\n"
    prefix = config_prefix(run_id, config)
    files = []
    for path, kind, body in (
        (f"logs/{role}-{rank}.log", "log", log),
        (f"logs/{role}-{rank}.gpu.csv", "gpu_memory", GPU_SAMPLES),
    ):
        pipeline.store.put_bytes(prefix + path, body.encode())
        entry = {"path": path, "role": role, "rank": rank, "kind": kind}
        files.append(entry | describe(io.BytesIO(body.encode()), kind))
    signed = sign(
        pipeline.keys.for_config(run_id, config), node_manifest(run_id, config, node, files)
    )
    pipeline.store.put_bytes(f"{prefix}node-{node}.json", json.dumps(signed).encode())
    pipeline.settler.on_node_manifest(run_id, config, node)


def node_manifest(
    run_id: str, config: str, node: int, files: list[Any], **extra: Any
) -> dict[str, Any]:
    """A node's manifest (or, with ``pair`` and ``arms``, its look manifest), unsigned."""
    return {
        "schema": 1,
        "run_id": run_id,
        "config": config,
        "node": node,
        "exit_code": 0,
        "started_at": "2026-11-30T03:00:00Z",
        "finished_at": "2026-11-30T03:10:00Z",
        "files": files,
        "engine_version": ENGINE_VERSION,
        **extra,
    }


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
