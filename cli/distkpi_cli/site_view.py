"""What the history site shows, computed from the history's rows alone: each page's runs,
its charts' points, ranges, regressions, change points and resets, its navigation and its
table, and the index's rows. Plain dataclasses (`to_json` gives them as a dict), built
without matplotlib or HTML; `site.py` renders them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from distkpi.domain.judging.changepoints import last_change_point
from distkpi.domain.judging.settings import ALL_KPIS
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.kpis import catalogue
from distkpi.domain.records import HistoryRecord, ResetRecord, SeriesRecord

TABLE_RUNS = 50
LABELS = {k.name: k.label for k in catalogue.CATALOGUE}
# a change point is looked for in a panel of at least this many points
CHANGE_POINT_MIN = 8


@dataclass
class Run:
    """One run of a history: its configs' records."""

    run_id: str
    sha: str
    finished_at: str
    records: list[HistoryRecord] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return any(
            j.get("verdict") == KpiVerdict.REGRESSED.value
            for r in self.records
            for j in r.judged.values()
        )


def runs_of(records: Iterable[HistoryRecord]) -> Iterator[Run]:
    """Records (newest first, a run's configs together, as the table keeps them) as runs."""
    current: Run | None = None
    for record in records:
        if current is None or record.run_id != current.run_id:
            if current is not None:
                yield current
            current = Run(record.run_id, record.sha, record.finished_at)
        current.records.append(record)
    if current is not None:
        yield current


def pages_of(runs: Iterable[Run], size: int) -> Iterator[list[Run]]:
    page: list[Run] = []
    for run in runs:
        page.append(run)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def with_next(pages: Iterable[list[Run]]) -> Iterator[tuple[list[Run], bool]]:
    """Each page, and whether an older one follows."""
    held: list[Run] | None = None
    for page in pages:
        if held is not None:
            yield held, True
        held = page
    if held is not None:
        yield held, False


def slug(series: SeriesRecord) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{series.repo}-{series.branch}-{series.model}")


def page_name(name: str, number: int) -> str:
    return f"{name}.html" if number == 1 else f"{name}-{number}.html"


@dataclass(frozen=True)
class Point:
    """A run's value of the KPI in a config's panel, at its place on the page (oldest 0)."""

    x: int
    value: float
    report: str  # the run's report, where the point links
    # the range the run was allowed, when it was judged against one
    low: float | None
    high: float | None
    regressed: bool


@dataclass(frozen=True)
class Line:
    """A vertical line between two runs (at x - 0.5) and what it says."""

    x: int
    label: str


@dataclass(frozen=True)
class Panel:
    config: str
    title: str
    points: tuple[Point, ...]
    change_point: Line | None  # the last change point of the values, when there is one
    resets: tuple[Line, ...]  # the audited baseline resets that apply to the config


@dataclass(frozen=True)
class Chart:
    kpi: str
    label: str
    file: str
    panels: tuple[Panel, ...]
    ticks: tuple[tuple[int, str], ...]  # (x, the commit's short sha)


@dataclass(frozen=True)
class TableRow:
    finished_at: str
    run_id: str
    report: str
    sha: str
    ok: int
    configs: int
    judged: str  # "regressed" or "ok"
    hardware: tuple[str, ...]
    gpu_hours: float | None  # None: no config says


@dataclass(frozen=True)
class Page:
    """One page of a history: its runs (newest first), charts, navigation and, on the
    first, the table of its last runs."""

    file: str
    number: int
    model: str
    repo: str
    branch: str
    runs: int
    first: str  # the oldest run's finished_at
    last: str  # the newest's
    charts: tuple[Chart, ...]
    nav: tuple[tuple[str, str], ...]  # (link, text)
    table: tuple[TableRow, ...] | None  # the first page's

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class IndexRow:
    repo: str
    branch: str
    model: str
    page: str
    state: str
    description: str
    finished_at: str


@dataclass(frozen=True)
class Index:
    rows: tuple[IndexRow, ...]
    unreached: tuple[str, ...]  # the report links that find no file from a folder site

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def enforced(runs: Sequence[Run]) -> list[str]:
    """The KPIs judged as enforced on this page (all measured ones where none was judged)."""
    measured = [
        k for k in ALL_KPIS if any(r.kpis.value(k) is not None for run in runs for r in run.records)
    ]
    judged = {
        kpi
        for run in runs
        for r in run.records
        for kpi, j in r.judged.items()
        if j.get("verdict") != KpiVerdict.NOT_ENFORCED.value
    }
    has_judgements = any(r.judged for run in runs for r in run.records)
    return [k for k in measured if k in judged] if has_judgements else measured


def panel(
    kpi: str,
    config: str,
    chronological: Sequence[Run],
    resets: Sequence[ResetRecord],
    report_url: Callable[[str], str],
) -> Panel:
    points = []
    for i, run in enumerate(chronological):
        for r in run.records:
            if r.config != config or r.kpis.value(kpi) is None:
                continue
            judged = r.judged.get(kpi, {})
            low = judged.get("low")
            points.append(
                Point(
                    x=i,
                    value=r.kpis.value(kpi) or 0.0,  # each is measured
                    report=report_url(run.run_id),
                    low=float(low) if low is not None else None,
                    high=float(judged["high"]) if low is not None else None,
                    regressed=judged.get("verdict") == "regressed",
                )
            )
    values = [p.value for p in points]
    cut = last_change_point(values) if len(values) >= CHANGE_POINT_MIN else None
    change = Line(points[cut].x, "change point") if cut is not None else None
    lines = []
    for reset in resets:
        if reset.config not in (config, "*"):
            continue
        at = next((i for i, run in enumerate(chronological) if run.finished_at > reset.at), None)
        if at is not None:
            lines.append(Line(at, f"reset: {reset.reason} ({reset.who})"))
    title = f"{config}: {LABELS[kpi]}"
    return Panel(config, title, tuple(points), change, tuple(lines))


def chart(
    kpi: str,
    file: str,
    chronological: Sequence[Run],
    configs: Sequence[str],
    resets: Sequence[ResetRecord],
    *,
    report_url: Callable[[str], str],
) -> Chart:
    """One KPI over a page's runs, a panel per config."""
    panels = tuple(panel(kpi, c, chronological, resets, report_url) for c in configs)
    step = max(1, len(chronological) // 10)
    ticks = tuple((i, chronological[i].sha[:7]) for i in range(0, len(chronological), step))
    return Chart(kpi, LABELS[kpi], file, panels, ticks)


def table_rows(runs: Sequence[Run], report_url: Callable[[str], str]) -> tuple[TableRow, ...]:
    rows = []
    for run in runs[:TABLE_RUNS]:
        hours = [r.kpis.gpu_hours for r in run.records if r.kpis.gpu_hours is not None]
        rows.append(
            TableRow(
                finished_at=run.finished_at,
                run_id=run.run_id,
                report=report_url(run.run_id),
                sha=run.sha[:10],
                ok=sum(r.kpis.status.value == "ok" for r in run.records),
                configs=len(run.records),
                judged="regressed" if run.regressed else "ok",
                hardware=tuple(sorted({r.kpis.hardware for r in run.records if r.kpis.hardware})),
                gpu_hours=sum(hours) if hours else None,
            )
        )
    return tuple(rows)


def page(
    series: SeriesRecord,
    number: int,
    newest_first: Sequence[Run],
    older: bool,
    resets: Sequence[ResetRecord],
    *,
    report_url: Callable[[str], str],
) -> Page:
    """Page ``number`` of a history, of its runs ``newest_first``; ``older``: whether an
    older page follows."""
    name = slug(series)
    chronological = newest_first[::-1]
    configs = sorted({r.config for run in newest_first for r in run.records})
    charts = tuple(
        chart(
            kpi, f"{name}-{number}-{kpi}.svg", chronological, configs, resets, report_url=report_url
        )
        for kpi in enforced(newest_first)
    )
    nav = [("index.html", "all histories")]
    if number > 1:
        nav.append((page_name(name, number - 1), "newer runs"))
    if older:
        nav.append((page_name(name, number + 1), "older runs"))
    return Page(
        file=page_name(name, number),
        number=number,
        model=series.model,
        repo=series.repo,
        branch=series.branch,
        runs=len(newest_first),
        first=chronological[0].finished_at,
        last=chronological[-1].finished_at,
        charts=charts,
        nav=tuple(nav),
        table=table_rows(newest_first, report_url) if number == 1 else None,
    )


def index(listed: Sequence[SeriesRecord], unreached: Sequence[str] = ()) -> Index:
    rows = tuple(
        IndexRow(
            s.repo, s.branch, s.model, f"{slug(s)}.html", s.state, s.description, s.finished_at
        )
        for s in listed
    )
    return Index(rows, tuple(unreached))
