"""The history site's files, updated as each run is published (services/site.py): real runs
of the pipeline (the seed's four configs, their nodes' real-format logs) go into the month's
chunk, the history's head, the index and their own file; two runs at once lose no point, a
run published again adds none, and every file is what its schema says."""

from __future__ import annotations

import contextlib
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.records import ResetRecord, RunRecord
from distkpi.exceptions import StorageError
from distkpi.reporting import api
from distkpi.reporting.app_files import AppFiles
from distkpi.services.publish import history_records
from distkpi.services.site import SitePublisher, rebuild
from distkpi_cli.site_pages import FolderSite
from tests.fakes import Clock, Counts, FakeRunFolders
from tests.service.pipeline import THROUGHPUT, Pipeline, report_all, start

SCHEMAS = Path(api.__file__).parent / "api_schemas"
SERIES = "site/api/series/PaddlePaddle/Paddle/develop/resnet50"
APP = AppFiles({"index.html": b"<!doctype html><title>history</title>"}, "app-1")


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def read(store: FakeRunFolders, key: str) -> Any:
    return json.loads(store.objects[key])


def valid_site(store: FakeRunFolders) -> dict[str, int]:
    """Every api/ file against its schema; how many of each kind there are."""
    kinds = {"index": 0, "series": 0, "chunk": 0, "run": 0, "regressions": 0}
    for key, data in store.objects.items():
        if not key.startswith("site/api/"):
            continue
        doc = json.loads(data)
        kind = doc["schema"].split(".")[2].split("/")[0]
        jsonschema.validate(doc, schema(kind))
        kinds[kind] += 1
    return kinds


def published_runs(pipeline: Pipeline, count: int, days_apart: float = 0.0) -> list[RunRecord]:
    runs = []
    for i in range(count):
        run_id = start(pipeline, delivery=f"d-{i}", sha=f"{i + 1:040x}")
        report_all(pipeline, run_id, **{"1x8": 1.0 + 0.01 * i})
        run = pipeline.runs.get(run_id)
        assert run is not None and run.published_at is not None
        runs.append(run)
        pipeline.clock.advance(int(days_apart * 86400) or 60)
    return runs


def test_a_published_push_writes_its_points_the_head_the_index_and_its_run_file() -> None:
    pipeline = Pipeline()
    (run,) = published_runs(pipeline, 1)
    store = pipeline.store
    assert valid_site(store) == {"index": 1, "series": 1, "chunk": 1, "run": 1, "regressions": 1}
    chunk = read(store, f"{SERIES}/2026-11.json")
    assert [(p["run_id"], p["config"]) for p in chunk["points"]] == [
        (run.run_id, c) for c in sorted(THROUGHPUT)
    ]
    point = next(p for p in chunk["points"] if p["config"] == "1x8")
    assert point["kpis"]["throughput"]["value"] == pytest.approx(720.0, rel=0.01)
    assert point["verdict"] == "success" and point["sha"] == run.trigger.sha
    head = read(store, f"{SERIES}.json")
    assert head["configs"] == sorted(THROUGHPUT) and head["runs"] == 1
    assert head["chunks"] == [
        {
            "path": "series/PaddlePaddle/Paddle/develop/resnet50/2026-11.json",
            "from": run.finished_at,
            "to": run.finished_at,
            "points": 4,
            "runs": 1,
            "month": "2026-11",
            "part": 1,
        }
    ]
    assert {k["name"]: k["direction"] for k in head["kpis"]}["throughput"] == "higher"
    (line,) = read(store, "site/api/index.json")["histories"]
    assert line["latest"] == {
        "run_id": run.run_id,
        "sha": run.trigger.sha,
        "finished_at": run.finished_at,
        "verdict": "success",
    }
    assert line["series"] == "series/PaddlePaddle/Paddle/develop/resnet50.json"
    assert line["sparkline"]["kpi"] == "throughput" and len(line["sparkline"]["values"]) == 1
    ran = read(store, f"site/api/runs/{run.run_id}.json")
    assert ran["report"] == f"../reports/{run.run_id}/index.html"
    assert ran["kpis"] == read(store, f"runs/{run.run_id}/kpis.json")  # `distkpi kpis --json`


def test_a_pull_requests_run_writes_no_site_file() -> None:
    pipeline = Pipeline()
    (run,) = published_runs(pipeline, 1)
    pull = FakeRunFolders()
    site = SitePublisher(pull, lambda *_: [], app=lambda: APP)
    from dataclasses import replace

    as_pr = replace(run, trigger=replace(run.trigger, event="pull_request", pull_request=7))
    assert as_pr.history_branch == "pr:7" and run.evaluation is not None
    assert site.publish(as_pr, run.evaluation, history_records(as_pr, run.evaluation)) is False
    assert pull.objects == {}


def publisher(store: FakeRunFolders, **kw: Any) -> SitePublisher:
    return SitePublisher(store, lambda *_: [], Counts(), Clock(), app=lambda: APP, **kw)


def publish(site: SitePublisher, run: RunRecord) -> bool:
    assert run.evaluation is not None
    return site.publish(run, run.evaluation, history_records(run, run.evaluation))


def test_a_run_published_again_adds_no_point_and_leaves_the_files_as_they_were() -> None:
    runs = published_runs(Pipeline(), 2)
    store = FakeRunFolders()
    site = publisher(store)
    for run in runs:
        publish(site, run)
    before = {k: v for k, v in store.objects.items() if not k.endswith("index.json")}
    publish(site, runs[0])  # the sweeper publishing the older run again
    after = {k: v for k, v in store.objects.items() if not k.endswith("index.json")}
    assert after == before
    assert len(read(store, f"{SERIES}/2026-11.json")["points"]) == 8
    (line,) = read(store, "site/api/index.json")["histories"]
    assert line["runs"] == 2 and line["latest"]["run_id"] == runs[1].run_id  # not the older


class Interleaved(FakeRunFolders):
    """Both publishers read each file before either writes it: each write but the first
    finds the file changed, as two runs finishing at the same moment would."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=10)
        self.met: set[tuple[str, int]] = set()

    def read_tagged(self, key: str) -> tuple[bytes, str] | None:
        found = super().read_tagged(key)
        ident = (key, threading.get_ident())
        if key.endswith(".json") and ident not in self.met:  # each thread's first read
            self.met.add(ident)
            with contextlib.suppress(threading.BrokenBarrierError):
                self.barrier.wait()
        return found


def test_two_runs_published_at_the_same_moment_lose_no_point() -> None:
    runs = published_runs(Pipeline(), 2)
    store = Interleaved(parties=2)
    counts = Counts()
    site = SitePublisher(store, lambda *_: [], counts, Clock(), app=lambda: APP)
    errors: list[BaseException] = []

    def go(run: RunRecord) -> None:
        try:
            publish(site, run)
        except BaseException as exc:  # reported below, with the test's failure
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(run,)) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert counts.totals["SiteWriteConflicts"] >= 1  # they did collide
    points = read(store, f"{SERIES}/2026-11.json")["points"]
    assert sorted({p["run_id"] for p in points}) == sorted(r.run_id for r in runs)
    assert len(points) == 8
    head = read(store, f"{SERIES}.json")
    assert head["runs"] == 2 and head["chunks"][0]["points"] == 8
    (line,) = read(store, "site/api/index.json")["histories"]
    assert line["runs"] == 2 and line["latest"]["run_id"] == runs[1].run_id
    assert valid_site(store)["run"] == 2


def test_runs_of_two_months_go_into_two_chunks_listed_oldest_first() -> None:
    pipeline = Pipeline()
    pipeline.clock.now = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
    runs = published_runs(pipeline, 3, days_apart=0.5)  # 30 Nov, 1 Dec, 1 Dec
    store = pipeline.store
    assert [(r.finished_at or "")[:7] for r in runs] == ["2026-11", "2026-12", "2026-12"]
    head = read(store, f"{SERIES}.json")
    assert [(c["path"].rsplit("/", 1)[1], c["runs"]) for c in head["chunks"]] == [
        ("2026-11.json", 1),
        ("2026-12.json", 2),
    ]
    december = read(store, f"{SERIES}/2026-12.json")["points"]
    assert [p["run_id"] for p in december[::4]] == [runs[1].run_id, runs[2].run_id]
    assert valid_site(store) == {"index": 1, "series": 1, "chunk": 2, "run": 3, "regressions": 1}


def test_a_baseline_reset_is_marked_on_the_head_once() -> None:
    pipeline = Pipeline()
    pipeline.history.record_reset(
        ResetRecord("PaddlePaddle/Paddle", "develop", "resnet50", "*", "new NCCL", "ops", "2026")
    )
    published_runs(pipeline, 2)
    (mark,) = read(pipeline.store, f"{SERIES}.json")["marks"]
    assert mark == {
        "kind": "reset",
        "at": "2026",
        "sha": None,
        "run_id": None,
        "config": None,
        "kpi": None,
        "text": "baseline reset: new NCCL (ops)",
    }


def test_the_application_is_copied_once_per_version_of_its_files() -> None:
    runs = published_runs(Pipeline(), 2)
    store = FakeRunFolders()
    app = [APP]
    site = SitePublisher(store, lambda *_: [], Counts(), Clock(), app=lambda: app[0])
    publish(site, runs[0])
    assert store.objects["site/index.html"] == APP.files["index.html"]
    store.objects["site/index.html"] = b"changed by hand"
    publish(site, runs[1])  # the same application: not copied again
    assert store.objects["site/index.html"] == b"changed by hand"
    app[0] = AppFiles({"index.html": b"v2"}, "app-2")
    publish(site, runs[1])
    assert store.objects["site/index.html"] == b"v2"
    assert read(store, "site/api/index.json")["app"] == "app-2"


def test_a_rebuild_from_the_table_writes_what_the_runs_published_one_by_one(
    tmp_path: Path,
) -> None:
    pipeline = Pipeline()
    pipeline.clock.now = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
    runs = published_runs(pipeline, 4, days_apart=0.5)
    site = FolderSite(tmp_path)
    found = {r.run_id: (r, r.evaluation) for r in runs if r.evaluation is not None}

    def finished(run_id: str) -> tuple[RunRecord, Evaluation] | None:
        return found.get(run_id)

    built = rebuild(
        pipeline.history, site, runs=finished, app=APP, now="2026-12-02T00:00:00", twins=True
    )
    assert (built.histories, built.runs, built.chunks, built.run_files) == (1, 4, 2, 4)
    for month in ("2026-11", "2026-12"):
        name = f"api/series/PaddlePaddle/Paddle/develop/resnet50/{month}.json"
        assert json.loads((tmp_path / name).read_text()) == read(pipeline.store, f"site/{name}")
    head = json.loads(
        (tmp_path / "api/series/PaddlePaddle/Paddle/develop/resnet50.json").read_text()
    )
    assert head == read(pipeline.store, f"{SERIES}.json")
    assert (tmp_path / "index.html").read_bytes() == APP.files["index.html"]
    # what the application reads from file://: each JSON file's twin script beside it
    assert (tmp_path / "api/index.js").read_text().startswith('distkpiLoaded("index.json",')
    index = json.loads((tmp_path / "api/index.json").read_text())
    published = read(pipeline.store, "site/api/index.json")
    assert index["histories"][0]["latest"] == published["histories"][0]["latest"]
    assert index["histories"][0]["runs"] == 4
    written = sorted((tmp_path / "api" / "runs").glob("*.json"))
    assert [p.stem for p in written] == sorted(found)
    for path in written:
        assert json.loads(path.read_text()) == read(pipeline.store, f"site/api/runs/{path.name}")


class Refusing(FakeRunFolders):
    """A bucket that refuses the site's conditional writes while ``down``."""

    down: bool = True

    def put_if(self, key: str, data: bytes, content_type: str, etag: str | None) -> bool:
        if self.down:
            raise StorageError(f"cannot write {key}: SlowDown")
        return super().put_if(key, data, content_type, etag)


def test_a_bucket_refusing_the_site_leaves_the_run_to_the_sweeper_which_adds_it() -> None:
    pipeline = Pipeline(store=Refusing())
    run_id = start(pipeline)
    report_all(pipeline, run_id)
    assert pipeline.runs.unpublished() == [run_id]  # the status waits for the site
    assert [s for s, _ in pipeline.states()] == ["pending"]
    pipeline.store.down = False  # type: ignore[attr-defined]
    pipeline.clock.advance(600)
    assert pipeline.publisher.republish_unpublished() == 1
    assert [s for s, _ in pipeline.states()] == ["pending", "success"]
    points = read(pipeline.store, f"{SERIES}/2026-11.json")["points"]
    assert {p["run_id"] for p in points} == {run_id} and len(points) == 4


def test_a_fault_of_the_site_itself_is_counted_and_the_status_still_goes_out() -> None:
    pipeline = Pipeline()
    pipeline.services.site.resets = lambda *_: 1 / 0  # type: ignore[assignment,misc,return-value]
    run_id = start(pipeline)
    report_all(pipeline, run_id)
    assert [s for s, _ in pipeline.states()] == ["pending", "success"]
    assert pipeline.runs.unpublished() == []
    assert pipeline.counts.totals["SiteFailures"] == 1
    assert not any(k.startswith("site/api/runs/") for k in pipeline.store.objects)


def test_a_point_names_who_wrote_its_commit() -> None:
    pipeline = Pipeline()
    report_all(pipeline, start(pipeline))  # tests/events/push.json: Yancey1989's commit
    chunk = read(pipeline.store, f"{SERIES}/2026-11.json")
    assert {p["author"] for p in chunk["points"]} == {"Yancey1989"}
