"""A diagnosis job's traces found in its signed manifests' entries and reduced, each checked
against its sha256, within the bound of what a config's diagnosis reads."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from distkpi.domain.contracts import FileEntry
from distkpi.domain.diagnosis import collect
from distkpi.domain.diagnosis.collect import reduce_traces, trace_files

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "trace_diff"
FILES = {
    "pair-1/a/files/trainer-0/profile/rank-0.json.gz": (TRACES / "control.json.gz").read_bytes(),
    "pair-1/b/files/trainer-0/profile/rank-0.json.gz": (TRACES / "test.json.gz").read_bytes(),
}


def entries(files: dict[str, bytes], **digests: str) -> list[FileEntry]:
    out = [
        FileEntry(path=p, role="trainer", rank=0, kind="file",
                  sha256=digests.get(p.split("/")[1], hashlib.sha256(b).hexdigest()))
        for p, b in files.items()
    ]  # fmt: skip
    others = ("pair-1/a/logs/trainer-0.log", "pair-1/b/files/trainer-0/seen.json")
    return out + [FileEntry(path=p, role="trainer", rank=0, kind="file") for p in others]


def test_the_arms_traces_are_base_and_head_and_nothing_else_is_a_trace() -> None:
    found = trace_files(entries(FILES))
    assert [(t.side, t.role, t.rank) for t in found] == [
        ("base", "trainer", 0),
        ("head", "trainer", 0),
    ]
    reduced = reduce_traces(found, FILES.__getitem__, base_sha="b", head_sha="h")
    assert reduced.problems == [] and reduced.diagnosis is not None
    assert reduced.diagnosis.largest_change == "compute"
    assert reduced.bytes_read == sum(map(len, FILES.values()))


def test_a_trace_changed_after_upload_is_not_reduced_and_its_side_is_missing() -> None:
    found = trace_files(entries(FILES, b="0" * 64))
    reduced = reduce_traces(found, FILES.__getitem__, base_sha="b", head_sha="h")
    assert reduced.diagnosis is None
    assert reduced.problems == [
        "pair-1/b/files/trainer-0/profile/rank-0.json.gz: changed after upload (sha256 is "
        "not the manifest's)",
        "no head traces: the command wrote none to DISTKPI_PROFILE_DIR",
    ]


def test_traces_past_the_config_s_bound_are_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "MAX_CONFIG_TRACE_BYTES", 1)
    read: list[str] = []

    def reading(path: str) -> bytes:
        read.append(path)
        return FILES[path]

    reduced = reduce_traces(trace_files(entries(FILES)), reading, base_sha="b", head_sha="h")
    assert read == ["pair-1/a/files/trainer-0/profile/rank-0.json.gz"]
    assert reduced.problems[0] == (
        "pair-1/b/files/trainer-0/profile/rank-0.json.gz: not read, past 1 bytes of traces"
    )


def test_events_past_the_config_s_bound_are_not_reduced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "MAX_CONFIG_EVENTS", 100_000)  # one trace's 74,937 fit
    reduced = reduce_traces(trace_files(entries(FILES)), FILES.__getitem__, base_sha="b",
                            head_sha="h")  # fmt: skip
    assert reduced.events == 74_937 and reduced.diagnosis is None
    assert reduced.problems[0] == (
        "pair-1/b/files/trainer-0/profile/rank-0.json.gz: not reduced, past 100000 events of traces"
    )
