"""The history site in the bucket (site/): its JSON files (reporting/api.py) updated when a
run of a published branch is published, and the application beside them.

A publish reads and writes the same few files whatever the history's length: the month's
chunk the run joins, the history's head, the index (each a conditional write, read again
and updated again when another writer got there first), the run's own file, and the
application only when its files changed. Nothing is rebuilt: `rebuild` (`distkpi site
--rebuild`) writes every file from the table, for migrations."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger

from distkpi.domain.layout import SITE
from distkpi.domain.records import HistoryRecord, ResetRecord, SeriesRecord, is_published
from distkpi.exceptions import ConflictError
from distkpi.reporting import api
from distkpi.reporting.app_files import AppFiles, app_files
from distkpi.reporting.app_twins import twin, twin_name
from distkpi.services.ports import Clock, Counter, RunFolders, no_metrics, utcnow

if TYPE_CHECKING:
    from distkpi.domain.judging.evaluation import Evaluation
    from distkpi.domain.records import RunRecord
    from distkpi.domain.regressions import Regression

logger = Logger(child=True)

JSON = "application/json"
TWIN = "text/javascript; charset=utf-8"
ATTEMPTS = 25  # conditional writes of one file before giving up (each lost one re-reads)
Doc = dict[str, Any]


def _dumps(doc: Mapping[str, Any]) -> bytes:
    """Compact JSON that any reader parses: a NaN or infinite number (a loss that diverged)
    is null."""
    return json.dumps(api.finite(doc), separators=(",", ":"), allow_nan=False).encode()


@dataclass
class SitePublisher:
    """Adds a published run to the site's files in the bucket."""

    store: RunFolders
    resets: Callable[[str, str, str], list[ResetRecord]]
    count: Counter = no_metrics
    clock: Clock = field(default=utcnow)
    app: Callable[[], AppFiles] = app_files
    prefix: str = SITE
    # a history's regression items (repo, branch, model), for api/regressions.json
    regressions: Callable[[str, str, str], Sequence[Regression]] | None = None

    def publish(
        self, run: RunRecord, evaluation: Evaluation, records: Sequence[HistoryRecord]
    ) -> bool:
        """The run's points into its month's chunk, the history's head and the index
        updated, its run file written, and the history's regressions as its items say now
        in regressions.json; False for a history that is not published (a pull request's).
        Publishing a run again changes nothing but the index's time."""
        repo, branch, model = run.trigger.repo, run.history_branch, run.model
        if not is_published(branch) or not records:
            return False
        points = [{**p, "author": run.trigger.author} for p in api.points_of(records)]
        at, month = points[0]["finished_at"], api.month_of(points[0]["finished_at"])
        head_name = api.series_path(repo, branch, model)
        found = self._read(head_name)
        current = json.loads(found[0]) if found else api.empty_series(repo, branch, model)
        part = api.part_for(current, month, at)
        path = api.chunk_path(repo, branch, model, month, part)
        chunk = self._update(
            path, lambda: api.chunk([]), lambda c: api.chunk(api.merged_points(c["points"], points))
        )
        held = chunk["points"]
        configs = {p["config"] for p in points}
        marks = api.change_point_marks(held, api.judged_kpis(points), configs)
        marks += api.reset_marks(self.resets(repo, branch, model))
        direction = evaluation.kpis.accuracy_direction.value  # a log may fix it (MLPerf)
        entry = api.chunk_entry(path, held, month, part)
        head = self._update(
            head_name,
            lambda: api.empty_series(repo, branch, model),
            lambda h: api.updated_series(h, entry, points, marks, direction),
            read=found,
            was_read=True,
        )
        latest = {
            "run_id": run.run_id,
            "sha": run.trigger.sha,
            "finished_at": points[0]["finished_at"],
            "verdict": evaluation.verdict.state.value,
        }
        spark = api.sparkline(held, evaluation.kpis.base_config)
        now = self.clock().isoformat(timespec="seconds")
        seen: dict[str, Any] = {}

        def line(index: Doc) -> Doc:
            seen["app"] = index.get("app")
            return api.updated_index(index, head, latest, spark, now)

        self._update(api.INDEX, lambda: api.empty_index(now), line, always=True)
        self._put(api.run_path(run.run_id), _dumps(api.run_file(run, evaluation)), JSON)
        if self.regressions is not None:
            now_held = self.regressions(repo, branch, model)
            self._update(
                api.REGRESSIONS,
                api.empty_regressions,
                lambda r: api.updated_regressions(r, repo, branch, model, now_held),
            )
        self._refresh_app(seen.get("app"))
        self.count("SiteRunsPublished")
        logger.info("history site updated", run_id=run.run_id, chunk=path, points=len(held))
        return True

    def mark(self, repo: str, branch: str, model: str, mark: Mapping[str, Any]) -> bool:
        """A mark (a bisection's culprit) on a published history's head; False where the
        history has no head (not published, or nothing published yet)."""
        name = api.series_path(repo, branch, model)
        found = self._read(name)
        if not is_published(branch) or found is None:
            return False
        self._update(
            name,
            lambda: api.empty_series(repo, branch, model),
            lambda h: {**h, "marks": api.merged_marks(h["marks"], [mark])},
            read=found,
            was_read=True,
        )
        return True

    def _refresh_app(self, deployed: str | None) -> None:
        """Copy the application into the site's root when its files are not the ones there
        (a new deploy), then record which are."""
        app = self.app()
        if deployed == app.digest:
            return
        for name, data in app.files.items():
            self.store.put_bytes(self.prefix + name, data, app.content_type(name))
        self._update(api.INDEX, lambda: api.empty_index(""), lambda i: {**i, "app": app.digest})
        logger.info("history site application copied", files=len(app.files))

    def _read(self, name: str) -> tuple[bytes, str] | None:
        return self.store.read_tagged(self.prefix + api.API + name)

    def _put(self, name: str, data: bytes, content_type: str) -> None:
        self.store.put_bytes(self.prefix + api.API + name, data, content_type)

    def _update(
        self,
        name: str,
        empty: Callable[[], Doc],
        change: Callable[[Doc], Doc],
        *,
        always: bool = False,
        read: tuple[bytes, str] | None = None,
        was_read: bool = False,
    ) -> Doc:
        """Read api/<name> (unless ``was_read``: then it is ``read``), apply ``change``,
        write it back only over the version read; on losing, read it again and apply again.
        A change that changes nothing is not written (unless ``always``)."""
        key = self.prefix + api.API + name
        for attempt in range(ATTEMPTS):
            found = read if attempt == 0 and was_read else self.store.read_tagged(key)
            current = json.loads(found[0]) if found is not None else empty()
            updated = change(current)
            if found is not None and updated == current and not always:
                return current
            if self.store.put_if(key, _dumps(updated), JSON, found[1] if found else None):
                return updated
            self.count("SiteWriteConflicts")
        raise ConflictError(f"{key}: {ATTEMPTS} conditional writes lost in a row")


class SiteWriter(Protocol):
    def write(self, name: str, data: bytes, content_type: str) -> None: ...


@dataclass(frozen=True)
class BucketSite:
    """The bucket's site/ prefix as a SiteWriter."""

    store: RunFolders
    prefix: str = SITE

    def write(self, name: str, data: bytes, content_type: str) -> None:
        self.store.put_bytes(self.prefix + name, data, content_type)


class HistoryReader(Protocol):
    """The history a site is drawn or rebuilt from (services.ports.History has it, and more)."""

    def history(
        self, repo: str, branch: str, model: str, since: str | None = None, limit: int | None = None
    ) -> Iterator[HistoryRecord]: ...
    def resets(self, repo: str, branch: str, model: str) -> list[ResetRecord]: ...
    def series(self, repo: str | None = None) -> list[SeriesRecord]: ...


@dataclass(frozen=True)
class Rebuilt:
    histories: int
    runs: int
    chunks: int
    run_files: int


# the rebuild looks for change points as a publish does, every this many runs of a chunk
REBUILD_STRIDE = 16


def _months(records: Iterable[HistoryRecord]) -> Iterator[tuple[str, list[HistoryRecord]]]:
    """Records (newest created first) as (month, its records), each month once, newest first.
    A month is complete once the records reach two months before it (a run finishes within
    a month of starting), so only the open months are held."""
    held: dict[str, list[HistoryRecord]] = {}
    for r in records:
        month = api.month_of(r.finished_at)
        created = api.month_of(r.created_at)
        for done in sorted((m for m in held if m > _next_month(created)), reverse=True):
            yield done, held.pop(done)
        held.setdefault(month, []).append(r)
    for done in sorted(held, reverse=True):
        yield done, held.pop(done)


def _next_month(month: str) -> str:
    year, number = int(month[:4]), int(month[5:])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def _rebuilt_marks(points: Sequence[api.Point], change_points: bool) -> list[Doc]:
    if not change_points:
        return []
    kpis = api.judged_kpis(points)
    runs = sorted({(p["finished_at"], p["run_id"]) for p in points})
    ends = [runs[i][0] for i in range(REBUILD_STRIDE - 1, len(runs), REBUILD_STRIDE)]
    if runs and (not ends or ends[-1] != runs[-1][0]):
        ends.append(runs[-1][0])
    marks: list[Doc] = []
    for end in ends:
        upto = [p for p in points if p["finished_at"] <= end]
        marks = api.merged_marks(marks, api.change_point_marks(upto, kpis))
    return marks


@dataclass
class _Rebuilt:
    """One history as rebuilt: its head, its newest chunk's points, its runs, its chunks."""

    head: Doc
    newest: list[api.Point] = field(default_factory=list)
    run_ids: set[str] = field(default_factory=set)
    chunks: int = 0


def _rebuild_history(
    history: HistoryReader,
    key: tuple[str, str, str],
    write: Callable[[str, Mapping[str, Any]], None],
    change_points: bool,
) -> _Rebuilt:
    """A history's chunks, newest month first, and its head (not written)."""
    done = _Rebuilt(api.empty_series(*key))
    resets = api.reset_marks(history.resets(*key))
    for month, records in _months(history.history(*key)):
        parts = api.split_month(api.merged_points([], api.points_of(records)))
        for part, points in enumerate(parts, 1):
            path = api.chunk_path(*key, month, part)
            write(path, api.chunk(points))
            marks = _rebuilt_marks(points, change_points) + resets
            entry = api.chunk_entry(path, points, month, part)
            done.head = api.updated_series(done.head, entry, points, marks)
            done.run_ids |= {p["run_id"] for p in points}
            done.chunks += 1
        if not done.newest:
            done.newest = parts[-1]
    return done


def rebuild(
    history: HistoryReader,
    writer: SiteWriter,
    *,
    runs: Callable[[str], tuple[RunRecord, Evaluation] | None] | None = None,
    repo: str | None = None,
    model: str | None = None,
    branch: str | None = None,
    app: AppFiles | None = None,
    now: str = "",
    change_points: bool = True,
    twins: bool = False,
) -> Rebuilt:
    """Every file of the site from the table: each history's chunks, head and index line
    (each history read once, a month held at a time), each run's file where ``runs`` finds
    its record, and the application; with ``twins`` (a site read from a folder, file://)
    each JSON file's `.js` twin beside it."""

    def write(name: str, doc: Mapping[str, Any]) -> None:
        data = _dumps(doc)
        writer.write(api.API + name, data, JSON)
        if twins:
            writer.write(api.API + twin_name(name), twin(name, data), TWIN)

    listed = [
        s
        for s in history.series(repo)
        if (model is None or s.model == model)
        and (s.branch == branch if branch is not None else is_published(s.branch))
    ]
    index = api.empty_index(now)
    total_runs = chunks = run_files = 0
    for series in listed:
        done = _rebuild_history(
            history, (series.repo, series.branch, series.model), write, change_points
        )
        if not done.newest:
            continue
        write(api.series_path(series.repo, series.branch, series.model), done.head)
        spark = api.sparkline(done.newest, None)
        index = api.updated_index(index, done.head, api.latest_of(done.newest), spark, now)
        total_runs, chunks = total_runs + len(done.run_ids), chunks + done.chunks
        for run_id in sorted(done.run_ids) if runs is not None else ():
            found = runs(run_id)  # type: ignore[misc]
            if found is not None:
                write(api.run_path(run_id), api.run_file(*found))
                run_files += 1
    if app is not None:
        for name, data in app.files.items():
            writer.write(name, data, app.content_type(name))
        index["app"] = app.digest
    write(api.INDEX, index)
    return Rebuilt(len(listed), total_runs, chunks, run_files)
