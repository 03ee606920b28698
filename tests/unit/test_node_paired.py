"""`distkpi node` in a paired run: both commits checked out and set up on every node, the
runs in the order W(A) | A B | B A | ..., each pair's files and look manifest sent when it
is done, and the collector's signed decision awaited by every node before the next pair.
The decisions here come from the test, standing where the collector stands (its own side is
tests/service/test_paired_looks.py and the e2e run); the nodes, the commands and the
checkouts are real."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.contracts import parse_run_spec
from distkpi.domain.kpis.runfolder import Reading, compute_run_kpis, config_kpis_of, gather_looks
from distkpi.domain.signing import sign, signed_by
from distkpi_cli.node.paired import PairedPlan, schedule
from distkpi_cli.node.runner import NodeRunner
from tests.conftest import git
from tests.unit.conftest import BUCKET
from tests.unit.test_node_runner import make_repo, manifest, node_env, run_job, uploaded

KEY = "k" * 64


def paired(base: str, pairs: int, **extra: str) -> dict[str, str]:
    return {
        "DISTKPI_PAIRED": json.dumps({"max_pairs": pairs, "warmup": True}),
        "DISTKPI_BASE_SHA": base,
        "DISTKPI_MANIFEST_KEY": KEY,
        "DISTKPI_DECISION_POLL_S": "0.1",
        **extra,
    }


def test_the_order_is_a_warm_up_of_a_then_pairs_alternating_ab_and_ba() -> None:
    plan = PairedPlan("0" * 40, 4, warmup=True)
    order = [(s.pair, s.arm) for s in schedule(plan)]
    assert order == [
        (None, "a"),
        *((1, "a"), (1, "b")),
        *((2, "b"), (2, "a")),
        *((3, "a"), (3, "b")),
        *((4, "b"), (4, "a")),
    ]
    assert [s.closes_pair for s in schedule(plan)] == [False, *[False, True] * 4]
    assert [s.prefix for s in schedule(PairedPlan("0" * 40, 1, warmup=False))] == [
        "pair-1/a/",
        "pair-1/b/",
    ]


class Collector:
    """Answers each pair's look, once every node's look manifest is in, as the collector
    does: ``answer(pair)`` is the decision's fields, or None to never answer."""

    def __init__(self, s3: Any, nodes: int, answer: Callable[[int], dict[str, Any] | None]):
        self.s3, self.nodes, self.answer = s3, nodes, answer
        self.looks: dict[int, list[dict[str, Any]]] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.done.is_set():
            for pair in range(1, 9):
                if pair in self.looks:
                    continue
                found = self._looks(pair)
                if len(found) < self.nodes:
                    continue
                self.looks[pair] = found
                fields = self.answer(pair)
                if fields is not None:
                    record = {"run_id": "r1", "config": "c", "pair": pair, **fields}
                    body = json.dumps(sign(KEY, record) if "forged" not in fields else record)
                    key = f"runs/r1/c/pair-{pair}/decision.json"
                    self.s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
            time.sleep(0.05)

    def _looks(self, pair: int) -> list[dict[str, Any]]:
        found = []
        for node in range(self.nodes):
            try:
                body = self.s3.get_object(
                    Bucket=BUCKET, Key=f"runs/r1/c/pair-{pair}/node-{node}.json"
                )
            except self.s3.exceptions.NoSuchKey:
                return []
            found.append(json.loads(body["Body"].read()))
        return found


@pytest.fixture
def collector(s3: Any) -> Iterator[Callable[..., Collector]]:
    made: list[Collector] = []

    def start(nodes: int, answer: Callable[[int], dict[str, Any] | None]) -> Collector:
        made.append(Collector(s3, nodes, answer))
        made[-1].thread.start()
        return made[-1]

    yield start
    for c in made:
        c.done.set()
        c.thread.join(timeout=5)


def versions(s3: Any, node: int) -> dict[str, str]:
    """Which commit each run's command ran in: prefix -> the checkout's version.txt."""
    out = {}
    for entry in manifest(s3, node)["files"]:
        if entry["path"].endswith("seen.json"):
            prefix = entry["path"].split("/files/")[0]
            out[prefix] = json.loads(uploaded(s3, entry["path"]))["version"]
    return out


def test_both_commits_run_in_turn_on_every_node_until_the_collector_says_stop(
    s3: Any, tmp_path: Path, collector: Callable[..., Collector]
) -> None:
    path, base, head = make_repo(tmp_path / "bench")
    looks = collector(2, lambda p: {"decision": "continue" if p == 1 else "stop"})
    assert run_job(path, head, tmp_path / "work", 2, **paired(base, 4)) == [0, 0]
    for node in (0, 1):
        ran = versions(s3, node)
        assert ran == {
            "warmup": "one",
            "pair-1/a": "one",
            "pair-1/b": "two",
            "pair-2/b": "two",
            "pair-2/a": "one",
        }  # stopped after pair 2: pairs 3 and 4 never ran
        final = manifest(s3, node)
        assert signed_by(KEY, final) and final["exit_code"] == 0
        kinds = {e["path"]: e["kind"] for e in final["files"]}
        assert kinds[f"pair-1/a/logs/trainer-{node}.log"] == "log"
        assert kinds[f"pair-2/b/logs/trainer-{node}.log"] == "log"
        # the warm-up and the setups are kept for people, never measured
        assert kinds[f"warmup/logs/trainer-{node}.log"] == "file"
        assert kinds[f"logs/trainer-{node}.log"] == "file"
        assert "cat version.txt" in uploaded(s3, f"logs/trainer-{node}.log")
    look = looks.looks[1][0]
    assert signed_by(KEY, look) and look["pair"] == 1 and look["node"] == 0
    assert set(look["arms"]) == {"a", "b"} and look["arms"]["b"]["exit_code"] == 0
    assert {e["path"].split("/")[1] for e in look["files"]} == {"a", "b"}
    assert all(e["path"].startswith("pair-1/") for e in look["files"])
    assert all("summary" in e for e in look["files"] if e["kind"] == "log")


def test_without_a_decision_or_with_a_forged_one_the_nodes_stop_after_the_pair(
    s3: Any, tmp_path: Path, collector: Callable[..., Collector]
) -> None:
    path, base, head = make_repo(tmp_path / "bench")
    collector(1, lambda p: {"decision": "continue", "forged": True})
    env = paired(base, 3, DISTKPI_DECISION_WAIT_S="2")
    assert run_job(path, head, tmp_path / "work", 1, **env) == [0]
    assert set(versions(s3, 0)) == {"warmup", "pair-1/a", "pair-1/b"}
    assert "after pair 1: stop: no decision on pair 1 in 2s" in uploaded(s3, "logs/trainer-0.log")


def test_a_failing_run_ends_the_sequence_and_fails_the_node_with_its_exit_code(
    s3: Any, tmp_path: Path, collector: Callable[..., Collector]
) -> None:
    path, base, _ = make_repo(tmp_path / "bench")
    (path / "bench.py").write_text("import sys\nprint('broken')\nsys.exit(3)\n")
    git(path, "commit", "--quiet", "-am", "three: the head breaks")
    head = git(path, "rev-parse", "HEAD")
    collector(2, lambda p: {"decision": "continue"})
    assert run_job(path, head, tmp_path / "work", 2, **paired(base, 4)) == [3, 3]
    final = manifest(s3, 0)
    assert final["exit_code"] == 3 and final["problem"] == "pair-1-b: the command exited 3"
    assert "broken" in uploaded(s3, "pair-1/b/logs/trainer-0.log")
    assert not any(e["path"].startswith("pair-2/") for e in final["files"])


def run_spec(base: str, head: str, nodes: int) -> dict[str, Any]:
    return {
        "schema": 1,
        "run_id": "r1",
        "repo": "org/bench",
        "sha": head,
        "ref": "refs/heads/main",
        "model": "bench",
        "target_accuracy": 0.4,
        "accuracy_pass": 0,
        "accuracy_tolerance": 0.01,
        "paired": {"base_sha": base, "max_pairs": 4, "warmup": True},
        "configs": [
            {
                "name": "c",
                "trainers": nodes,
                "gpus_per_trainer": 2,
                "pservers": 0,
                "batch_size": 64,
                "nodes": nodes,
            }
        ],
    }


def test_the_folder_a_paired_job_leaves_reads_as_each_pairs_kpis_of_both_arms(
    s3: Any, tmp_path: Path, collector: Callable[..., Collector]
) -> None:
    path, base, head = make_repo(tmp_path / "bench")
    # commit two is the slower: 10 imgs/s per trainer at commit one, 8 at two
    (path / "bench.py").write_text(
        (path / "bench.py").read_text().replace("= 10 imgs/s", "= 8 imgs/s")
    )
    git(path, "commit", "--quiet", "-am", "three: slower")
    head = git(path, "rev-parse", "HEAD")
    collector(2, lambda p: {"decision": "continue" if p == 1 else "stop"})
    assert run_job(path, head, tmp_path / "work", 2, **paired(base, 4)) == [0, 0]
    s3.put_object(Bucket=BUCKET, Key="runs/r1/run.json", Body=json.dumps(run_spec(base, head, 2)))
    store = S3RunStore(BUCKET, s3)
    run = compute_run_kpis(store.run("r1"))
    assert (run.sha, run.base_sha) == (head, base)
    (config,) = run.configs
    assert [p.pair for p in config.pairs] == [1, 2]
    for pair in config.pairs:
        assert pair.a.throughput == pytest.approx(20.0)  # 2 trainers x 10 imgs/s
        assert pair.b.throughput == pytest.approx(16.0)
    assert config.throughput == pytest.approx(16.0) and config.runs == 2
    assert config.gpu_hours is not None and config.gpu_hours > 0  # every run that ran
    shown = run.to_json()
    assert shown["base_sha"] == base and shown["sha"] == head
    assert shown["configs"]["c"]["pairs"][0]["a"]["throughput"] == pytest.approx(20.0)
    # the collector's view after pair 1: the look manifests alone
    spec = parse_run_spec(run_spec(base, head, 2))
    reading = Reading(key=KEY, run_id="r1")
    looked = config_kpis_of(gather_looks(store.run("r1"), spec.configs[0], 1, reading), spec)
    assert [p.pair for p in looked.pairs] == [1] and looked.pairs[0].b.throughput == 16.0
    # a look manifest not signed with the config's key makes its node invalid
    forged = json.loads(uploaded(s3, "pair-1/node-1.json"))
    forged["pair"] = 2
    s3.put_object(Bucket=BUCKET, Key="runs/r1/c/pair-2/node-1.json", Body=json.dumps(forged))
    evidence = gather_looks(store.run("r1"), spec.configs[0], 2, reading)
    assert "not signed with this config's key" in evidence.invalid_nodes[1]


def test_a_paired_node_nobody_meets_ends_with_the_problem_and_its_setups_log(
    s3: Any, tmp_path: Path, collector: Callable[..., Collector]
) -> None:
    path, base, head = make_repo(tmp_path / "bench")
    collector(2, lambda p: {"decision": "continue"})
    # node 1 never comes: node 0 meets nobody before its first run
    env = paired(base, 2, DISTKPI_RENDEZVOUS_S="1")

    node0 = node_env(path, head, tmp_path / "work", 0, 2, 0, **env)
    assert NodeRunner(node0, ["python3", "bench.py"]).run() == 1
    final = manifest(s3, 0)
    assert "rendezvous: node(s) 1 never showed up" in final["problem"]
    assert "cat version.txt" in uploaded(s3, "logs/trainer-0.log")  # both setups ran


# a diagnosis job's command: a trace of its commit into DISTKPI_PROFILE_DIR, and one too large
PROFILED = (
    "import json, os, pathlib\n"
    "folder = pathlib.Path(os.environ['DISTKPI_PROFILE_DIR'])\n"
    "version = pathlib.Path('version.txt').read_text().strip()\n"
    "steps = os.environ['DISTKPI_PROFILE_STEPS']\n"
    "trace = {'traceEvents': [], 'version': version, 'steps': steps}\n"
    "(folder / 'rank-0.json').write_text(json.dumps(trace))\n"
    "with open(folder / 'rank-1.json', 'wb') as f:\n"
    "    f.truncate(128 * 2**20 + 1)\n"
    "print('Pass = 0, Training performance = 10 imgs/s, Test accuracy = 0.5')\n"
)


def test_a_diagnosis_job_runs_base_then_head_and_uploads_each_trace_within_the_bound(
    s3: Any, tmp_path: Path
) -> None:
    path, base, _ = make_repo(tmp_path / "bench")
    (path / "bench.py").write_text(PROFILED)
    git(path, "commit", "--quiet", "-am", "two, profiled")
    head = git(path, "rev-parse", "HEAD")
    env = {
        "DISTKPI_PAIRED": json.dumps({"max_pairs": 1, "warmup": False}),
        "DISTKPI_BASE_SHA": base,
        "DISTKPI_MANIFEST_KEY": KEY,
        "DISTKPI_PROFILE_STEPS": "3",
    }
    assert run_job(path, head, tmp_path / "work", 1, **env) == [0]
    final = manifest(s3, 0)
    assert signed_by(KEY, final) and final["exit_code"] == 0
    traces = {e["path"]: e for e in final["files"] if "/profile/" in e["path"]}
    # the head's trace, digested and named in the signed manifest as any file; the one
    # over 128 MiB is not uploaded, and the node's log says so
    assert list(traces) == ["pair-1/b/files/trainer-0/profile/rank-0.json"]
    entry = traces["pair-1/b/files/trainer-0/profile/rank-0.json"]
    assert entry["kind"] == "file" and len(entry["sha256"]) == 64
    trace = json.loads(uploaded(s3, entry["path"]))
    assert trace == {"traceEvents": [], "version": "two", "steps": "3"}
    log = uploaded(s3, "pair-1/b/logs/trainer-0.log")
    assert "profile/rank-1.json (over 134217728 bytes)" in log
    # the base commit's bench.py (DUMP) writes no trace: its files are what it left
    seen_a = [e for e in final["files"] if e["path"].startswith("pair-1/a/files/")]
    assert [e["path"] for e in seen_a] == ["pair-1/a/files/trainer-0/seen.json"]
