"""The history API's files as pure functions (reporting/api.py): names as path segments,
points keyed by run and config, a head whose counts only widen, an index whose latest run
is never an older one, change points marked, and the schemas the files follow."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from distkpi.domain.kpis.engine import ConfigKpis
from distkpi.domain.records import HistoryRecord
from distkpi.reporting import api

SCHEMAS = Path(api.__file__).parent / "api_schemas"


def record(
    run: int, config: str, throughput: float, at: str, verdict: str = "pass"
) -> HistoryRecord:
    kpis = ConfigKpis.from_record(
        {"name": config, "status": "ok", "gpus": 8, "throughput": throughput, "hardware": None}
    )
    judged = {"throughput": {"low": throughput * 0.9, "high": throughput * 1.1, "verdict": verdict}}
    return HistoryRecord(
        "PaddlePaddle/Paddle", "release/2.6", "resnet50", config, f"{run:040x}", f"run-{run}",
        at, at, kpis, judged, verdict="success",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "segment"),
    [
        ("develop", "develop"),
        ("release/2.6", "release~2F2.6"),
        ("release_2.6", "release_2.6"),  # not the same file as release/2.6
        ("pr:12", "pr~3A12"),
        ("..", "~2E2E"),
        ("feature/ü", "feature~2F~C3~BC"),
    ],
)
def test_a_name_is_one_reversible_path_segment(name: str, segment: str) -> None:
    assert api.path_part(name) == segment


def test_a_series_and_its_chunks_live_under_the_repository_branch_and_model() -> None:
    assert api.series_path("PaddlePaddle/Paddle", "release/2.6", "resnet50") == (
        "series/PaddlePaddle/Paddle/release~2F2.6/resnet50.json"
    )
    assert api.chunk_path("PaddlePaddle/Paddle", "develop", "resnet50", "2026-11") == (
        "series/PaddlePaddle/Paddle/develop/resnet50/2026-11.json"
    )
    assert api.month_of("2026-11-30T23:59:59.999+00:00") == "2026-11"
    with pytest.raises(ValueError, match="not an ISO time: 'yesterday'"):
        api.month_of("yesterday")


def test_points_are_keyed_by_run_and_config_and_kept_oldest_first() -> None:
    first = api.points_of([record(1, "1x8", 720.0, "2026-11-01T00:00:00")])
    second = api.points_of(
        [
            record(2, "1x8", 700.0, "2026-11-02T00:00:00"),
            record(2, "1x1", 120.0, "2026-11-02T00:00:00"),
        ]
    )
    merged = api.merged_points(second, first)
    assert [(p["run_id"], p["config"]) for p in merged] == [
        ("run-1", "1x8"),
        ("run-2", "1x1"),
        ("run-2", "1x8"),
    ]
    assert api.merged_points(merged, second) == merged  # published again: nothing added
    kpi = merged[0]["kpis"]["throughput"]
    assert kpi == {
        "value": 720.0,
        "lower": pytest.approx(648.0),
        "upper": pytest.approx(792.0),
        "verdict": "ok",
        "judged": "pass",
    }
    jsonschema.validate(api.chunk(merged), schema("chunk"))


def schema(name: str) -> dict[str, object]:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def test_a_head_written_from_an_older_chunk_never_shrinks_what_a_newer_one_recorded() -> None:
    path = api.chunk_path("PaddlePaddle/Paddle", "develop", "resnet50", "2026-11")
    older = api.points_of([record(1, "1x8", 720.0, "2026-11-01T00:00:00")])
    newer = api.merged_points(
        older, api.points_of([record(2, "1x8", 700.0, "2026-11-02T00:00:00")])
    )
    head = api.empty_series("PaddlePaddle/Paddle", "develop", "resnet50")
    head = api.updated_series(head, api.chunk_entry(path, newer, "2026-11", 1), newer)
    late = api.updated_series(head, api.chunk_entry(path, older, "2026-11", 1), older)  # slower
    assert (
        late["chunks"]
        == head["chunks"]
        == [
            {
                "path": path,
                "from": "2026-11-01T00:00:00",
                "to": "2026-11-02T00:00:00",
                "points": 2,
                "runs": 2,
                "month": "2026-11",
                "part": 1,
            }
        ]
    )
    assert late["runs"] == 2
    jsonschema.validate(late, schema("series"))


def test_the_index_keeps_the_newest_run_when_an_older_one_is_published_again() -> None:
    head = {"repo": "r/r", "branch": "develop", "model": "m", "runs": 2}
    new = {"run_id": "b", "sha": "2" * 40, "finished_at": "2026-11-02", "verdict": "failure"}
    old = {"run_id": "a", "sha": "1" * 40, "finished_at": "2026-11-01", "verdict": "success"}
    spark = {"kpi": "throughput", "config": "1x8", "values": [1.0, 2.0]}
    index = api.updated_index(api.empty_index("t0"), head, new, spark, "t1")
    again = api.updated_index(index, head, old, {**spark, "values": [1.0]}, "t2")
    (line,) = again["histories"]
    assert line["latest"] == new and line["sparkline"]["values"] == [1.0, 2.0]
    assert again["updated_at"] == "t2"
    jsonschema.validate(again, schema("index"))


def test_a_level_change_is_marked_where_the_new_level_starts() -> None:
    # 8 runs at 720 samples/s then 8 at 475 (a third slower), each config's own noise
    records = [
        record(
            i,
            "1x8",
            (720.0 if i < 8 else 475.0) * (1 + 0.01 * ((i * 7) % 5 - 2)),
            f"2026-11-{i + 1:02d}",
        )
        for i in range(16)
    ]
    points = api.points_of(records)
    (mark,) = api.change_point_marks(points, api.judged_kpis(points))
    assert (mark["kind"], mark["run_id"], mark["config"], mark["kpi"]) == (
        "change_point",
        "run-8",
        "1x8",
        "throughput",
    )
    assert mark["text"] == "1x8: throughput (samples/s) changed level"
    assert api.change_point_marks(points[:7]) == []  # too few values to say


def test_a_sparkline_is_the_last_thirty_throughputs_of_one_config_oldest_first() -> None:
    points = api.points_of(
        [record(i, "1x8", float(i), f"2026-11-01T{i // 60:02d}:{i % 60:02d}") for i in range(40)]
    )
    spark = api.sparkline(points, None)
    assert spark == {
        "kpi": "throughput",
        "config": "1x8",
        "values": [float(i) for i in range(10, 40)],
    }


def test_a_busy_month_goes_on_in_parts_and_a_run_published_again_finds_its_own() -> None:
    key = ("PaddlePaddle/Paddle", "develop", "resnet50")
    runs = [
        [record(i, c, 700.0, f"2026-11-01T{i // 60:02d}:{i % 60:02d}") for c in ("1x1", "1x8")]
        for i in range(api.CHUNK_POINTS // 2 + 3)  # two points a run: a part and a bit
    ]
    head = api.empty_series(*key)
    parts: dict[int, list[api.Point]] = {}
    placed = {}
    for run in runs:
        points = api.points_of(run)
        part = api.part_for(head, "2026-11", points[0]["finished_at"])
        parts[part] = api.merged_points(parts.get(part, []), points)
        path = api.chunk_path(*key, "2026-11", part)
        head = api.updated_series(head, api.chunk_entry(path, parts[part], "2026-11", part), points)
        placed[run[0].run_id] = part
    assert [len(p) for _, p in sorted(parts.items())] == [api.CHUNK_POINTS, 6]
    assert [c["path"].rsplit("/", 1)[1] for c in head["chunks"]] == [
        "2026-11.json",
        "2026-11.2.json",
    ]
    for run in (runs[0], runs[api.CHUNK_POINTS // 2 - 1], runs[-1]):  # published again
        at = run[0].finished_at
        assert api.part_for(head, "2026-11", at) == placed[run[0].run_id]
    every = [p for _, part in sorted(parts.items()) for p in part]
    assert api.split_month(every) == [parts[1], parts[2]]  # as the rebuild splits it


def test_a_number_json_cannot_hold_is_null() -> None:
    doc = {"kpis": {"final_loss": {"value": float("nan")}}, "values": [1.0, float("inf")]}
    assert api.finite(doc) == {"kpis": {"final_loss": {"value": None}}, "values": [1.0, None]}
