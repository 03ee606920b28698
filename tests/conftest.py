"""Shared fixtures: run folders written to disk by a small builder."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import botocore.loaders
import botocore.session
import pytest

import distkpi.domain.diagnosis.breakdown
import distkpi.domain.diagnosis.collect
import distkpi.domain.diagnosis.trace
import distkpi.reporting.page
import distkpi_cli.diagnosis.folder

SHA = "a" * 40

# Each boto3 Session (one per identity, per moto stack, per wiring) would load and decode
# botocore's service models again, about 0.2 s a client: one loader for the test process
# keeps what it decoded, as one Lambda container keeps its clients' models.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)  # type: ignore[attr-defined]


def drawn_once(draw: Callable[..., bytes | None]) -> Callable[..., bytes | None]:
    """A chart function that draws each distinct input once per test process: the charts are
    pure functions of their arguments, and matplotlib took most of the time of the tests that
    publish runs (a history seeded run by run is the same in every test that seeds it). An
    argument that cannot be pickled is drawn every time."""
    drawn: dict[bytes, bytes | None] = {}

    @functools.wraps(draw)
    def once(*args: Any, **kwargs: Any) -> bytes | None:
        try:
            key = pickle.dumps((args, sorted(kwargs.items())))
        except (pickle.PicklingError, TypeError, AttributeError):
            return draw(*args, **kwargs)
        if key not in drawn:
            if len(drawn) >= 512:
                drawn.clear()
            drawn[key] = draw(*args, **kwargs)
        return drawn[key]

    return once


for _chart in ("speedup_chart", "throughput_history_chart"):
    setattr(distkpi.reporting.page, _chart, drawn_once(getattr(distkpi.reporting.page, _chart)))


def read_once(read: Callable[..., Any]) -> Callable[..., Any]:
    """``read_trace`` that parses the same bytes once per test process: the traces of
    tests/data/traces (megabytes, a couple of seconds each) are read by a dozen tests. A
    trace is immutable, and an unreadable one raises every time."""
    parsed: dict[tuple[bytes, tuple[Any, ...]], Any] = {}

    @functools.wraps(read)
    def once(data: bytes, **kwargs: Any) -> Any:
        key = (hashlib.sha256(data).digest(), tuple(sorted(kwargs.items())))
        if key not in parsed:
            if len(parsed) >= 64:
                parsed.clear()
            parsed[key] = read(data, **kwargs)
        return parsed[key]

    return once


def reduced_once(reduce: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``reduce_trace`` once per trace object (which read_once hands out again for the same
    bytes): a pure function of an immutable trace."""
    reduced: dict[int, tuple[Any, Any]] = {}

    @functools.wraps(reduce)
    def once(trace: Any) -> Any:
        kept = reduced.get(id(trace))
        if kept is None or kept[0] is not trace:
            if len(reduced) >= 64:
                reduced.clear()
            kept = reduced[id(trace)] = (trace, reduce(trace))
        return kept[1]

    return once


_read = read_once(distkpi.domain.diagnosis.trace.read_trace)
_reduce = reduced_once(distkpi.domain.diagnosis.breakdown.reduce_trace)
for _module in (distkpi.domain.diagnosis.trace, distkpi.domain.diagnosis.collect,
                distkpi_cli.diagnosis.folder):  # fmt: skip
    if hasattr(_module, "read_trace"):
        _module.read_trace = _read  # type: ignore[attr-defined]
for _module in (distkpi.domain.diagnosis.breakdown, distkpi.domain.diagnosis.collect,
                distkpi_cli.diagnosis.folder):  # fmt: skip
    _module.reduce_trace = _reduce  # type: ignore[attr-defined]


def offline_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials for moto, and no endpoint inherited from the shell: every AWS call a
    test makes stays in-process."""
    for key, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s output, stripped; CalledProcessError when it fails."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def mllog(key: str, value: object, time_ms: int = 0, **metadata: object) -> str:
    record = {"key": key, "value": value, "time_ms": time_ms, "metadata": metadata}
    return ":::MLLOG " + json.dumps(record)


GOLDEN = Path(__file__).resolve().parent / "golden"


def assert_golden(name: str, text: str) -> None:
    """``text`` is tests/golden/<name> to the letter; DISTKPI_UPDATE_GOLDEN=1 accepts a change
    on purpose (review the diff)."""
    path = GOLDEN / name
    if os.environ.get("DISTKPI_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text()


def trainer_log(per_trainer: float, accuracy: float = 0.7) -> str:
    """A trainer's MLLOG: five epochs at ``per_trainer`` samples/s, reaching ``accuracy``."""
    lines = [mllog("run_start", None, 1_000_000)]
    for epoch in range(5):
        lines.append(
            mllog("tracked_stats", {"throughput": per_trainer}, 1_000_000 + 60_000 * (epoch + 1))
        )
        acc = accuracy - 0.1 * (4 - epoch)
        lines.append(mllog("eval_accuracy", acc, 1_000_000 + 60_000 * (epoch + 1), epoch_num=epoch))
    lines.append(mllog("run_stop", None, 1_400_000, status="success"))
    return "\n".join(lines) + "\n"


class RunBuilder:
    """Writes run.json, node manifests and their files the way a real job does."""

    def __init__(self, root: Path, **run: Any) -> None:
        self.root = root
        self.run: dict[str, Any] = {
            "schema": 1,
            "run_id": "run-1",
            "repo": "org/repo",
            "sha": SHA,
            "ref": "refs/heads/develop",
            "model": "mnist",
            "target_accuracy": 0.6,
            "accuracy_pass": 2,
            "accuracy_tolerance": 0.001,
            "configs": [],
        }
        self.run.update(run)

    def config(
        self, name: str, trainers: int = 1, gpus: int = 1, pservers: int = 0, batch: int = 64
    ) -> RunBuilder:
        self.run["configs"].append(
            {
                "name": name,
                "trainers": trainers,
                "gpus_per_trainer": gpus,
                "pservers": pservers,
                "batch_size": batch,
                "nodes": trainers + pservers,
            }
        )
        self.write_run()
        return self

    def write_run(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "run.json").write_text(json.dumps(self.run))

    def node(
        self,
        config: str,
        node: int,
        files: Iterable[tuple[str, str, int, str, str | bytes]],
        exit_code: int = 0,
        **manifest_fields: Any,
    ) -> RunBuilder:
        """files: (path, role, rank, kind, content); content None means: named but absent."""
        folder = self.root / config
        entries = []
        for path, role, rank, kind, content in files:
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            data = content.encode() if isinstance(content, str) else content
            target.write_bytes(data)
            entries.append({"path": path, "role": role, "rank": rank, "kind": kind})
        manifest = {
            "schema": 1,
            "node": node,
            "exit_code": exit_code,
            "started_at": "2026-11-30T00:00:00Z",
            "finished_at": "2026-11-30T00:10:00Z",
            "files": entries,
            **manifest_fields,
        }
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"node-{node}.json").write_text(json.dumps(manifest))
        return self

    def trainer(
        self, config: str, node: int, log: str, gpu_csv: str | None = None, rank: int | None = None
    ) -> RunBuilder:
        rank = node if rank is None else rank
        files: list[tuple[str, str, int, str, str | bytes]] = [
            (f"trainer-{rank}.log", "trainer", rank, "log", log)
        ]
        if gpu_csv is not None:
            files.append((f"trainer-{rank}.csv", "trainer", rank, "gpu_memory", gpu_csv))
        return self.node(config, node, files)


def pass_log(*throughputs: float, accuracies: Iterable[float] = ()) -> str:
    lines = [f"Pass = {i}, Training performance = {t} imgs/s" for i, t in enumerate(throughputs)]
    lines += [f"Pass: {i}, Test Accuracy: {a}" for i, a in enumerate(accuracies)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def run_builder(tmp_path: Path) -> RunBuilder:
    return RunBuilder(tmp_path / "run")
