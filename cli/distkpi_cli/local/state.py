"""The local stack's AWS state kept between runs: the table's items and the bucket's objects,
exported into a state folder when a stack stops and imported when the next one starts.

moto offers no dump of its backends, and replaying its recorder would resubmit every job,
so the state is exported with the APIs themselves (a Scan of the local table is the one
whole-table read distkpi makes, and only of this folder's own table). The layout:

    <state>/state.json        {"format": 1, "items": N, "objects": M}, written last
    <state>/table.jsonl       one item per line, in DynamoDB's JSON
    <state>/objects.jsonl     {"key", "file", "content_type"} per object
    <state>/objects/<n>       each object's bytes

Loading a folder must never run or read anything it names: a shared or copied folder is
data, not code. So only the prefixes a save writes are loaded (`runs/`, `reports/`, `site/`;
never `suites/`, which would be a suite the stack runs), and only from files named by digits
directly inside `objects/`, none a symlink; any other entry is an error naming it.

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
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from distkpi.domain.layout import REPORTS, RUNS, SITE
from distkpi_cli.commands.common import UsageError

FORMAT = 1
# the bucket's prefixes a state folder holds: results, never configuration
KEPT = (RUNS, REPORTS, SITE)
OBJECT_FILE = re.compile(r"[0-9]+")


class StateError(UsageError):
    """A state folder that cannot be used as it is (none, damaged, of another format, or in
    use by another stack): what --state names is unusable, so every command exits 2."""


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
        except (OSError, ValueError) as exc:
            raise self._fail(f"its contents cannot be read ({type(exc).__name__}: {exc})") from exc
        files = [self._object_file(number, entry) for number, entry in enumerate(objects, 1)]
        try:
            dynamodb, s3 = client("dynamodb"), client("s3")
            for item in items:
                dynamodb.put_item(TableName=table, Item=_decode(item))
            for entry, file in zip(objects, files, strict=True):
                s3.put_object(
                    Bucket=bucket,
                    Key=entry["key"],
                    Body=file.read_bytes(),
                    ContentType=entry["content_type"],
                )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self._fail(f"its contents cannot be read ({type(exc).__name__}: {exc})") from exc
        return len(items), len(objects)

    def _object_file(self, number: int, entry: Any) -> Path:
        """The file an objects.jsonl entry names, once it is one a save could have written."""
        if not isinstance(entry, dict) or not isinstance(entry.get("content_type"), str):
            raise self._fail(f"objects.jsonl entry {number} is not an object entry")
        key, name = entry.get("key"), entry.get("file")
        where = f"objects.jsonl entry {number} ({key!r})"
        if not isinstance(key, str) or not key.startswith(KEPT):
            raise self._fail(f"{where} is outside {', '.join(KEPT)}: a state folder holds no more")
        if not isinstance(name, str) or not OBJECT_FILE.fullmatch(name):
            raise self._fail(f"{where} names the file {name!r}, not a number inside objects/")
        folder = self.path / "objects"
        file = folder / name
        if folder.is_symlink() or file.is_symlink():
            raise self._fail(f"{where}: objects/{name} is a symlink")
        if file.resolve().parent != folder.resolve():
            raise self._fail(f"{where}: objects/{name} resolves outside objects/")
        return file

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
                if not listed["Key"].startswith(KEPT):  # each stack deploys its own suites
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
