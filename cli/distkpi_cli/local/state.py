"""The local stack's AWS state kept between runs: the table's items and the bucket's objects,
exported into a state folder when a stack stops and imported when the next one starts.

moto offers no dump of its backends, and replaying its recorder would resubmit every job,
so the state is exported with the APIs themselves (a Scan of the local table is the one
whole-table read distkpi makes, and only of this folder's own table). The layout:

    <state>/state.json        {"format": 1, "items": N, "objects": M}, written last
    <state>/table.jsonl       one item per line, in DynamoDB's JSON
    <state>/objects.jsonl     {"key", "file", "content_type"} per object
    <state>/objects/<n>       each object's bytes

A save writes `<state>.new`, then swaps it in with two renames, so a stack killed while
saving leaves `<state>.new` or `<state>.old` beside it: that, another format, or a file that
cannot be read is a clear error naming the folder and `--fresh`, never a silent reset.
Only one stack uses a state folder at a time (`<state>.lock`).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from distkpi.domain.layout import SUITES
from distkpi.exceptions import DistkpiError

FORMAT = 1


class StateError(DistkpiError):
    """A state folder that cannot be used as it is."""


def _encode(value: Any) -> Any:
    """DynamoDB JSON with binary attributes as base64 (the client hands out bytes)."""
    if isinstance(value, bytes):
        return {"__b64__": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__b64__"}:
            return base64.b64decode(value["__b64__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@dataclass(frozen=True)
class StateFolder:
    path: Path

    def _sibling(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    @property
    def up_file(self) -> Path:
        """Where a running `distkpi local up` says how to reach it."""
        return self._sibling(".up.json")

    def _fail(self, why: str) -> StateError:
        return StateError(
            f"state folder {self.path}: {why}. Keep it and find out why, or start from empty "
            "state with --fresh (which deletes it)"
        )

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder for one stack; a second one is refused, never interleaved."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._sibling(".lock").open("a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = lock.read().strip() or "another process"
                raise StateError(
                    f"state folder {self.path} is in use by {holder}; wait for it to finish, "
                    "or give another --state"
                ) from None
            _note_holder(lock)
            try:
                yield
            finally:
                lock.truncate(0)
                fcntl.flock(lock, fcntl.LOCK_UN)

    def check(self) -> bool:
        """Whether there is state to load; StateError when there is some that cannot be."""
        for leftover in (self._sibling(".new"), self._sibling(".old")):
            if leftover.exists():
                raise self._fail(
                    f"{leftover.name} is left beside it: a stack was stopped while saving"
                )
        if not self.path.exists():
            return False
        try:
            meta = json.loads((self.path / "state.json").read_text())
        except (OSError, ValueError) as exc:
            raise self._fail(f"state.json cannot be read ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else meta
            raise self._fail(f"it is in state format {found!r}; this distkpi reads {FORMAT}")
        return True

    def fresh(self) -> None:
        """Empty state: the folder and anything a killed save left beside it."""
        for path in (self.path, self._sibling(".new"), self._sibling(".old")):
            shutil.rmtree(path, ignore_errors=True)

    def load(self, client: Callable[[str], Any], table: str, bucket: str) -> tuple[int, int]:
        """Put the saved items and objects into ``table`` and ``bucket``: how many of each."""
        if not self.check():
            return 0, 0
        try:
            items = [json.loads(line) for line in _lines(self.path / "table.jsonl")]
            objects = [json.loads(line) for line in _lines(self.path / "objects.jsonl")]
            dynamodb, s3 = client("dynamodb"), client("s3")
            for item in items:
                dynamodb.put_item(TableName=table, Item=_decode(item))
            for entry in objects:
                body = (self.path / "objects" / entry["file"]).read_bytes()
                s3.put_object(
                    Bucket=bucket, Key=entry["key"], Body=body, ContentType=entry["content_type"]
                )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self._fail(f"its contents cannot be read ({type(exc).__name__}: {exc})") from exc
        return len(items), len(objects)

    def save(self, client: Callable[[str], Any], table: str, bucket: str) -> tuple[int, int]:
        """Write ``table`` and ``bucket`` as the folder's state, replacing it whole."""
        new, old = self._sibling(".new"), self._sibling(".old")
        shutil.rmtree(new, ignore_errors=True)
        (new / "objects").mkdir(parents=True)
        items = 0
        with (new / "table.jsonl").open("w") as out:
            pages = client("dynamodb").get_paginator("scan").paginate(TableName=table)
            for page in pages:
                for item in page["Items"]:
                    out.write(json.dumps(_encode(item)) + "\n")
                    items += 1
        objects = _save_objects(client("s3"), bucket, new)
        (new / "state.json").write_text(
            json.dumps({"format": FORMAT, "items": items, "objects": objects})
        )
        if self.path.exists():
            self.path.rename(old)
        new.rename(self.path)
        shutil.rmtree(old, ignore_errors=True)
        return items, objects


def _save_objects(s3: Any, bucket: str, into: Path) -> int:
    count = 0
    with (into / "objects.jsonl").open("w") as out:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for listed in page.get("Contents", []):
                if listed["Key"].startswith(SUITES):  # each stack deploys the suite it is given
                    continue
                got = s3.get_object(Bucket=bucket, Key=listed["Key"])
                name = str(count)
                (into / "objects" / name).write_bytes(got["Body"].read())
                kind = got.get("ContentType") or "binary/octet-stream"
                out.write(json.dumps({"key": listed["Key"], "file": name, "content_type": kind}))
                out.write("\n")
                count += 1
    return count


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def _note_holder(lock: IO[str]) -> None:
    lock.seek(0)
    lock.truncate(0)
    lock.write(f"distkpi pid {os.getpid()}\n")
    lock.flush()
