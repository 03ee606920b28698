"""The services as the composition root (entry/root.py) builds them, on the in-memory
ports of tests/fakes.py, and what a job's nodes leave in the run folder."""

from __future__ import annotations

import copy
import io
import json
from dataclasses import dataclass, field
from typing import Any

from distkpi.domain.github.webhook import Trigger, decide, parse
from distkpi.domain.layout import config_prefix
from distkpi.domain.logs.engineversion import engine_version
from distkpi.domain.signing import ManifestKeys, sign
from distkpi.entry.root import Services
from distkpi.services.accept import Acceptances
from distkpi.services.bisect import Bisector
from distkpi.services.deadlines import RunDeadlines
from distkpi.services.launch import Outcome, RunStarter
from distkpi.services.looks import PairedLooks
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
    FakeChat,
    FakeChatQuota,
    FakeComments,
    FakeDeliveries,
    FakeGitHub,
    FakeHistory,
    FakeJobs,
    FakeLauncher,
    FakePullRequests,
    FakeRegressions,
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
    """The services as the composition root (entry/root.py) builds them for the Lambdas,
    on in-memory adapters."""

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
    comments: FakeComments = field(default_factory=FakeComments)
    chat: FakeChat | None = None  # a stack with a chat webhook: a test gives one
    chat_quota: FakeChatQuota = field(default_factory=FakeChatQuota)
    chat_per_hour: int = 6
    bisections: FakeBisections = field(default_factory=FakeBisections)
    regressions: FakeRegressions = field(default_factory=FakeRegressions)
    deliveries: FakeDeliveries = field(default_factory=FakeDeliveries)
    pull_requests: FakePullRequests = field(default_factory=FakePullRequests)
    # each config's key, from a master secret as the stack's
    keys: ManifestKeys = field(default_factory=lambda: ManifestKeys(lambda: "master secret"))
    draw: DrawReport = draw_report  # the real report; tests/fakes.py's plain_report: none
    # the stack's suites confirm; a test that judges one run each asks for none
    confirms: bool = False
    cancel_superseded: bool = True
    run_timeout_s: int = 3600
    queue_wait_s: int = 3600
    github_web_url: str = "https://github.com"

    def __post_init__(self) -> None:
        suite = ROOT / "infra" / "suites" / "resnet50.yaml"
        self.store.put_bytes(f"suites/{suite.name}", suite.read_bytes())
        self.services = Services(self)

    # what the root asks of a stack besides the fakes
    @property
    def catalog(self) -> FakeRunFolders:
        return self.store

    @property
    def manifest_keys(self) -> ManifestKeys:
        return self.keys

    @property
    def count(self) -> Counts:
        return self.counts

    def report_url(self, run_id: str) -> str:
        return report_url(run_id)

    def fleet(self) -> None:
        return None

    # the services, as the root built them
    @property
    def statuses(self) -> StatusPublisher:
        return self.services.statuses

    @property
    def publisher(self) -> Publisher:
        return self.services.publisher

    @property
    def settler(self) -> ConfigSettler:
        return self.services.settler

    @property
    def starter(self) -> RunStarter:
        return self.services.starter

    @property
    def bisector(self) -> Bisector:
        assert self.services.bisector is not None
        return self.services.bisector

    @property
    def deadlines(self) -> RunDeadlines:
        return self.services.deadlines

    @property
    def looks(self) -> PairedLooks:
        return self.services.looks

    @property
    def acceptances(self) -> Acceptances:
        return self.services.acceptances

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
        "engine_version": engine_version(),
        **extra,
    }


def report_all(pipeline: Pipeline, run_id: str, **scale: float) -> None:
    run = pipeline.runs.get(run_id)
    assert run is not None
    for cfg in run.spec.configs:
        for node in range(cfg.nodes):
            report_node(pipeline, run_id, cfg.name, node, scale=scale.get(cfg.name, 1.0))


def jobs_running(pipeline: Pipeline, run_id: str) -> None:
    """Batch's RUNNING for each of the run's jobs, now (the nodes start)."""
    at = pipeline.clock().isoformat(timespec="milliseconds")
    for config in pipeline.runs.configs(run_id):
        if config.job_id is not None:
            pipeline.services.job_starts.on_job_running(config.job_id, at)


def start(pipeline: Pipeline, delivery: str = "d-1", sha: str | None = None) -> str:
    started = pipeline.starter.handle_delivery(pushed(sha) if sha else pushed(), delivery)
    assert started.outcome is Outcome.STARTED
    (run_id,) = started.runs
    return run_id
