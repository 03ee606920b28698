"""A paired run through the services, on in-memory ports: each pair's look manifests make
the collector decide (stop or go on), the decision is stored once and written signed for
the nodes, the nodes' final manifests settle the configs, and the run is judged by its
pairs against the paired history of the branch's earlier pushes, which it then joins."""

from __future__ import annotations

import io
import json
import math
import random
from dataclasses import replace
from typing import Any

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.contracts import PairedRun
from distkpi.domain.judging.settings import PairedSettings
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus
from distkpi.domain.layout import config_prefix, decision_key
from distkpi.domain.records import HistoryRecord
from distkpi.domain.signing import sign, signed_by
from distkpi.exceptions import NotFoundError
from distkpi.services.looks import PairedLooks
from distkpi_cli.node.summaries import describe
from tests.conftest import trainer_log
from tests.fakes import FakeRunSource
from tests.service.pipeline import GPU_SAMPLES, THROUGHPUT, Pipeline, node_manifest, start

BASE_SHA = "1" * 40


def paired_pipeline() -> tuple[Pipeline, PairedLooks, str]:
    """A push to develop whose suite is paired, with 30 earlier paired pushes' history."""
    pipeline = Pipeline()
    run_id = start(pipeline)
    run = pipeline.runs.get(run_id)
    assert run is not None
    spec = run.spec.model_copy(
        update={"paired": PairedRun(base_sha=BASE_SHA, max_pairs=4, warmup=True)}
    )
    settings = run.verdict_settings.model_copy(update={"paired": PairedSettings(), "confirm": None})
    pipeline.runs._runs[run_id] = replace(run, spec=spec, verdict_settings=settings)
    seed_paired_history(pipeline, run.trigger.repo, spec.configs)
    looks = pipeline.looks
    return pipeline, looks, run_id


def seed_paired_history(pipeline: Pipeline, repo: str, configs: Any) -> None:
    """30 earlier pushes to develop, each an A/B of its parent: their first pairs' d."""
    rng = random.Random(7)
    for i in range(30):
        created = f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"
        for cfg in configs:
            d = rng.gauss(0, 0.03)
            kpis = ConfigKpis(cfg.name, cfg.gpus, ConfigStatus.OK, 100.0, 60.0, 0.7, 9e3, None, ())
            paired = {
                "throughput": d,
                "time_to_accuracy_s": -d + rng.gauss(0, 0.01),
                "test_accuracy": rng.gauss(0, 0.002),
                "trainer_gpu_memory_mib": rng.gauss(0, 0.005),
            }
            if cfg.pservers:
                paired["pserver_gpu_memory_mib"] = rng.gauss(0, 0.005)
            if cfg.gpus > 1:
                paired |= {"speedup": rng.gauss(0, 0.04), "efficiency": rng.gauss(0, 0.04)}
            record = HistoryRecord(
                repo, "develop", "resnet50", cfg.name, f"{i:040x}", f"past-{i}",
                created, created, kpis, paired=paired,
            )  # fmt: skip
            pipeline.history.put([record])


def files_of(pipeline: Pipeline, run_id: str, config: str, node: int, pair: int, **scale: float):
    """What one node's runs of one pair leave: each arm's log and GPU samples."""
    spec = pipeline.runs.get(run_id).spec.config(config)  # type: ignore[union-attr]
    role = "trainer" if node < spec.trainers else "pserver"
    rank = node if role == "trainer" else node - spec.trainers
    entries = []
    for arm in ("a", "b"):
        speed = THROUGHPUT[config] * scale.get(arm, 1.0) / spec.trainers
        log = trainer_log(speed) if role == "trainer" else "ok\n"
        for path, kind, body in (
            (f"pair-{pair}/{arm}/logs/{role}-{rank}.log", "log", log),
            (f"pair-{pair}/{arm}/logs/{role}-{rank}.gpu.csv", "gpu_memory", GPU_SAMPLES),
        ):
            pipeline.store.put_bytes(config_prefix(run_id, config) + path, body.encode())
            entry = {"path": path, "role": role, "rank": rank, "kind": kind}
            entries.append(entry | describe(io.BytesIO(body.encode()), kind))
    return entries


def manifest(run_id: str, config: str, node: int, files: list[Any], **extra: Any):
    return node_manifest(run_id, config, node, files, wall_s=600.0, **extra)


class Job:
    """One config's job, node by node, as `distkpi node` runs a paired run."""

    def __init__(self, pipeline: Pipeline, looks: PairedLooks, run_id: str, config: str):
        self.pipeline, self.looks, self.run_id, self.config = pipeline, looks, run_id, config
        spec = pipeline.runs.get(run_id).spec.config(config)  # type: ignore[union-attr]
        self.nodes = spec.nodes
        self.sent: dict[int, list[Any]] = {n: [] for n in range(self.nodes)}
        self.key = pipeline.keys.for_config(run_id, config)

    def pair(self, pair: int, **scale: float) -> Any:
        """Every node sends pair ``pair``'s files and look manifest; the last one's event
        makes the decision, which is returned as the nodes read it."""
        decisions = []
        for node in range(self.nodes):
            files = files_of(self.pipeline, self.run_id, self.config, node, pair, **scale)
            self.sent[node] += files
            look = manifest(self.run_id, self.config, node, files, pair=pair, arms={
                "a": {"exit_code": 0, "wall_s": 300.0}, "b": {"exit_code": 0, "wall_s": 300.0}
            })  # fmt: skip
            key = f"{config_prefix(self.run_id, self.config)}pair-{pair}/node-{node}.json"
            self.pipeline.store.put_bytes(key, json.dumps(sign(self.key, look)).encode())
            decisions.append(self.looks.on_look_manifest(self.run_id, self.config, pair, node))
        assert all(d is None for d in decisions[:-1])  # only when every node's is in
        if pair == 4:  # the last pair: nobody waits, nothing is decided
            assert decisions[-1] is None
            return None
        written = json.loads(
            self.pipeline.store.objects[decision_key(self.run_id, self.config, pair)]
        )
        assert signed_by(self.key, written)
        return written

    def end(self) -> None:
        for node in range(self.nodes):
            final = sign(self.key, manifest(self.run_id, self.config, node, self.sent[node]))
            key = f"{config_prefix(self.run_id, self.config)}node-{node}.json"
            self.pipeline.store.put_bytes(key, json.dumps(final).encode())
            self.pipeline.settler.on_node_manifest(self.run_id, self.config, node)


def run_to_the_end(
    pipeline: Pipeline, looks: PairedLooks, run_id: str, slow: str | None = None
) -> dict[str, list[Any]]:
    """Every config's job, pair by pair until its decision says stop; ``slow``'s head is
    25% slower than its base."""
    decisions: dict[str, list[Any]] = {}
    for config in THROUGHPUT:
        job = Job(pipeline, looks, run_id, config)
        scale = {"b": 0.75} if config == slow else {}
        for pair in range(1, 5):
            decision = job.pair(pair, **scale)
            if decision is None:
                break
            decisions.setdefault(config, []).append(decision)
            if decision["decision"] == "stop":
                break
        job.end()
    return decisions


def test_an_unchanged_commit_stops_after_one_pair_everywhere_and_passes() -> None:
    pipeline, looks, run_id = paired_pipeline()
    decisions = run_to_the_end(pipeline, looks, run_id)
    assert {c: [d["decision"] for d in ds] for c, ds in decisions.items()} == {
        c: ["stop"] for c in THROUGHPUT
    }
    assert all(ds[0]["outcome"] == "pass" for ds in decisions.values())
    run = pipeline.runs.get(run_id)
    assert run is not None and run.evaluation is not None
    assert run.evaluation.verdict.state is State.SUCCESS, run.evaluation.description
    assert pipeline.states()[-1][0] == "success"
    # the run joins the paired history with its first pairs' differences (none here)
    joined = [r for r in pipeline.history.records.values() if r.run_id == run_id]
    assert len(joined) == 4 and all(r.paired["throughput"] == pytest.approx(0.0) for r in joined)
    assert all(len(r.kpis.pairs) == 1 for r in joined)


def test_a_head_25_percent_slower_goes_on_after_the_first_pair_and_fails_at_the_second() -> None:
    pipeline, looks, run_id = paired_pipeline()
    decisions = run_to_the_end(pipeline, looks, run_id, slow="1x8")
    slow = decisions["1x8"]
    assert [d["decision"] for d in slow] == ["continue", "stop"], slow
    assert slow[1]["outcome"] == "fail" and "throughput" in slow[1]["why"]
    assert [d["decision"] for d in decisions["2x8-4ps"]] == ["stop"]
    run = pipeline.runs.get(run_id)
    assert run is not None and run.evaluation is not None
    assert run.evaluation.verdict.state is State.FAILURE
    assert "1x8" in run.evaluation.description
    stored = pipeline.runs.config(run_id, "1x8")
    assert stored is not None and set(stored.looks) == {1, 2}
    assert stored.kpis is not None and len(stored.kpis.pairs) == 2
    first = next(
        r for r in pipeline.history.records.values() if r.run_id == run_id and r.config == "1x8"
    )
    assert first.paired["throughput"] == pytest.approx(math.log(0.75))


def test_a_look_decided_twice_keeps_the_first_decision() -> None:
    pipeline, looks, run_id = paired_pipeline()
    job = Job(pipeline, looks, run_id, "1x1")
    first = job.pair(1)
    again = looks.on_look_manifest(run_id, "1x1", 1, 0)
    assert again is not None and again.decision == first["decision"]
    assert pipeline.runs.config(run_id, "1x1").looks[1]["decision"] == first["decision"]  # type: ignore[union-attr]


def test_a_look_manifest_not_signed_with_the_configs_key_decides_nothing() -> None:
    pipeline, looks, run_id = paired_pipeline()
    files = files_of(pipeline, run_id, "1x1", 0, 1)
    forged = sign("another key", manifest(run_id, "1x1", 0, files, pair=1))
    key = f"{config_prefix(run_id, '1x1')}pair-1/node-0.json"
    pipeline.store.put_bytes(key, json.dumps(forged).encode())
    assert looks.on_look_manifest(run_id, "1x1", 1, 0) is None
    assert decision_key(run_id, "1x1", 1) not in pipeline.store.objects


def test_a_look_manifest_of_an_unpaired_run_or_an_unknown_one_is_refused() -> None:
    pipeline = Pipeline()
    run_id = start(pipeline)  # the bundled resnet50 suite confirms; it does not pair
    looks = pipeline.looks
    with pytest.raises(NotFoundError, match="no paired config"):
        looks.on_look_manifest(run_id, "1x1", 1, 0)
    with pytest.raises(NotFoundError, match="no run"):
        looks.on_look_manifest("never-started", "1x1", 1, 0)


def test_no_look_is_decided_after_the_last_pair_nor_for_a_pair_past_it() -> None:
    pipeline, looks, run_id = paired_pipeline()
    job = Job(pipeline, looks, run_id, "1x1")
    assert job.pair(4) is None  # the last: the nodes go on to their final manifests
    assert looks.on_look_manifest(run_id, "1x1", 9, 0) is None


def test_each_look_manifest_is_read_once_per_look_not_once_per_arrival() -> None:
    """Given a 2-node config's first pair arriving node by node, then the look manifests are
    read when the last arrives, once each, not again at every arrival before it."""
    pipeline, looks, run_id = paired_pipeline()
    read: list[str] = []
    source_of = pipeline.store.run

    def counting(run: str) -> Any:
        source = source_of(run)
        real = source.read_bytes

        def read_bytes(path: str) -> bytes:
            read.append(path)
            return real(path)

        source.read_bytes = read_bytes  # type: ignore[method-assign]
        return source

    pipeline.store.run = counting  # type: ignore[method-assign,assignment]
    job = Job(pipeline, looks, run_id, "2x8-4ps")
    assert job.nodes > 1
    job.pair(1)
    looked = [p for p in read if p.startswith("2x8-4ps/pair-1/node-")]
    assert sorted(looked) == [f"2x8-4ps/pair-1/node-{n}.json" for n in range(job.nodes)]


def test_a_16_node_look_reads_each_look_manifest_once_and_lists_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a paired run whose 4x8-8ps config is widened to 16 nodes (8 trainers, 8 pservers)
    pipeline, looks, run_id = paired_pipeline()
    run = pipeline.runs.get(run_id)
    assert run is not None
    wide = [
        c.model_copy(update={"trainers": 8, "nodes": 16}) if c.name == "4x8-8ps" else c
        for c in run.spec.configs
    ]
    pipeline.runs._runs[run_id] = replace(run, spec=run.spec.model_copy(update={"configs": wide}))
    record = pipeline.runs.config(run_id, "4x8-8ps")
    assert record is not None
    pipeline.runs._configs[run_id]["4x8-8ps"] = replace(record, nodes_expected=16)
    reads: dict[str, int] = {}
    lists: list[str] = []
    opened = FakeRunSource.open

    def counted(self: FakeRunSource, path: str) -> Any:
        reads[path] = reads.get(path, 0) + 1
        return opened(self, path)

    monkeypatch.setattr(FakeRunSource, "open", counted)
    monkeypatch.setattr(FakeRunSource, "list_names", lambda self, folder: lists.append(folder))
    job = Job(pipeline, looks, run_id, "4x8-8ps")
    assert job.nodes == 16
    for pair in (1, 2):
        reads.clear()
        # When every node sends its look manifest of the pair (each arrival an event)
        decided = job.pair(pair)
        # Then the look is decided once, by the last arrival, having read every look
        # manifest of the run's pairs so far exactly once, and listed no folder
        assert decided is not None and decided["pair"] == pair
        manifests = {p: n for p, n in reads.items() if p.startswith("4x8-8ps/pair-")}
        assert manifests == {
            f"4x8-8ps/pair-{p}/node-{n}.json": 1 for p in range(1, pair + 1) for n in range(16)
        }
        assert lists == []
    assert pipeline.runs.config(run_id, "4x8-8ps").look_arrivals == {  # type: ignore[union-attr]
        1: frozenset(range(16)),
        2: frozenset(range(16)),
    }


def test_a_configs_last_pair_is_counted_for_the_other_configs_looks() -> None:
    """After the last pair nobody waits for a decision, but the look manifests still count:
    another config's look reads this config's pairs as far as all its nodes sent them."""
    pipeline, looks, run_id = paired_pipeline()
    config = next(iter(THROUGHPUT))
    job = Job(pipeline, looks, run_id, config)
    for pair in range(1, 5):
        job.pair(pair)
    record = pipeline.runs.config(run_id, config)
    assert record is not None
    assert record.look_arrivals[4] == frozenset(range(job.nodes))
