"""`distkpi site`: the KPI history as static pages a person browses from the file system.

- `index.html` lists every history (repo, branch, model) with its latest verdict, from the
  table's series index (a Query, never a Scan).
- Each history gets pages of `page_runs` runs, newest first: for every enforced KPI a chart
  (SVG, one panel per config) of its value over the commits, with the range each run was
  allowed shaded, regressions marked, change points and audited baseline resets drawn as
  vertical lines with their reason, and every point a link to its run's report. The first
  page also holds a table of the last 50 runs.

The history is read page by page (newest first) and drawn a page of runs at a time, so the
time grows linearly with the runs and the memory stays that of one page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Protocol

from distkpi.domain.judging.changepoints import last_change_point
from distkpi.domain.judging.settings import ALL_KPIS
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.kpis import catalogue
from distkpi.domain.records import HistoryRecord, ResetRecord, SeriesRecord, is_published


class HistoryReader(Protocol):
    """The history the site draws (services.ports.History has it, and more)."""

    def history(
        self, repo: str, branch: str, model: str, since: str | None = None, limit: int | None = None
    ) -> Iterator[HistoryRecord]: ...
    def resets(self, repo: str, branch: str, model: str) -> list[ResetRecord]: ...
    def series(self, repo: str | None = None) -> list[SeriesRecord]: ...


DEFAULT_PAGE_RUNS = 500
TABLE_RUNS = 50
REPORT_URL = "../reports/{run_id}/index.html"  # the bucket's layout, and out/local's
LABELS = {k.name: k.label for k in catalogue.CATALOGUE}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 1em 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
.success { background: #e6f4ea; } .failure, .regressed { background: #fce8e6; }
.error { background: #fef7e0; }
object { display: block; margin: 1em 0; max-width: 100%; }
nav a { margin-right: 1em; }
"""


class SiteWriter(Protocol):
    def write(self, name: str, data: bytes, content_type: str) -> None: ...


@dataclass(frozen=True)
class FolderSite:
    path: Path

    def write(self, name: str, data: bytes, content_type: str) -> None:
        del content_type
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / name).write_bytes(data)

    def reaches(self, link: str) -> bool:
        """Whether a link on its pages finds a file: relative links are resolved from the
        folder; a URL with a scheme (https://...) or an absolute path is taken as given."""
        if "://" in link or link.startswith("/"):
            return True
        return (self.path / link).is_file()


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


@dataclass(frozen=True)
class SiteSummary:
    histories: int
    runs: int
    pages: int
    # the report links (one per run) that find no file from a site written to a folder
    unreached: tuple[str, ...] = ()

    def unreached_line(self, where: Path) -> str | None:
        """One line saying which report links lead nowhere, and what to do; None: all reach."""
        if not self.unreached:
            return None
        return (
            f"{len(self.unreached)} of {self.runs} report link(s) on {where} find no file, "
            f"e.g. {self.unreached[0]}: write the site where the reports are beside it "
            "(out/local/site for out/local/reports), or give --report-url"
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


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def kpi_chart(
    kpi: str,
    chronological: Sequence[Run],
    configs: Sequence[str],
    resets: Sequence[ResetRecord],
    report_url: Callable[[str], str],
) -> bytes:
    """One KPI over the page's runs, a panel per config, as SVG with linked points."""
    plt = _pyplot()
    figure, panels = plt.subplots(
        len(configs), 1, figsize=(11, 2.3 * len(configs)), squeeze=False, sharex=True
    )
    for axes, config in zip(panels[:, 0], configs, strict=True):
        points = [
            (i, run, r)
            for i, run in enumerate(chronological)
            for r in run.records
            if r.config == config and r.kpis.value(kpi) is not None
        ]
        xs = [i for i, _, _ in points]
        ys = [r.kpis.value(kpi) or 0.0 for _, _, r in points]  # each is measured
        ranges = [(i, r.judged.get(kpi, {})) for i, _, r in points]
        shaded = [(i, j["low"], j["high"]) for i, j in ranges if j.get("low") is not None]
        if shaded:  # a bar a run wide each: one run's range shows as well as many
            axes.bar(
                [i for i, _, _ in shaded],
                [float(hi) - float(lo) for _, lo, hi in shaded],
                width=1.0,
                bottom=[float(lo) for _, lo, _ in shaded],
                color="tab:green",
                alpha=0.12,
                linewidth=0,
                label="allowed range",
            )
        axes.plot(xs, ys, "-", color="tab:blue", linewidth=0.8)
        dots = axes.scatter(xs, ys, s=14, color="tab:blue", zorder=3)
        dots.set_urls([report_url(run.run_id) for _, run, _ in points])
        bad = [
            (i, y) for (i, j), y in zip(ranges, ys, strict=True) if j.get("verdict") == "regressed"
        ]
        if bad:
            marks = axes.scatter(
                [i for i, _ in bad],
                [y for _, y in bad],
                s=60,
                marker="v",
                color="tab:red",
                zorder=4,
                label="regressed",
            )
            marks.set_urls([report_url(chronological[i].run_id) for i, _ in bad])
        cut = last_change_point(ys) if len(ys) >= 8 else None
        if cut is not None:
            axes.axvline(xs[cut] - 0.5, color="tab:purple", linestyle="--", linewidth=1)
            axes.annotate(
                "change point",
                (xs[cut] - 0.5, 1.0),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                color="tab:purple",
                va="top",
            )
        for reset in resets:
            if reset.config not in (config, "*"):
                continue
            at = next(
                (i for i, run in enumerate(chronological) if run.finished_at > reset.at), None
            )
            if at is None:
                continue
            axes.axvline(at - 0.5, color="tab:orange", linestyle=":", linewidth=1.2)
            axes.annotate(
                f"reset: {reset.reason} ({reset.who})",
                (at - 0.5, 0.02),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                color="tab:orange",
            )
        axes.set_title(f"{config}: {LABELS[kpi]}", fontsize=9)
        axes.grid(alpha=0.3)
        if shaded or bad:
            axes.legend(fontsize=7, loc="best")
    ticks = list(range(0, len(chronological), max(1, len(chronological) // 10)))
    panels[-1, 0].set_xticks(ticks, [chronological[i].sha[:7] for i in ticks], fontsize=7)
    panels[-1, 0].set_xlabel("commit (oldest to newest)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg")
    plt.close(figure)
    return buffer.getvalue()


def _enforced(runs: Sequence[Run]) -> list[str]:
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


def _runs_table(runs: Sequence[Run], report_url: Callable[[str], str]) -> str:
    rows = []
    for run in runs[:TABLE_RUNS]:
        ok = sum(r.kpis.status.value == "ok" for r in run.records)
        hardware = sorted({r.kpis.hardware for r in run.records if r.kpis.hardware})
        hours = [r.kpis.gpu_hours for r in run.records if r.kpis.gpu_hours is not None]
        judged = "regressed" if run.regressed else "ok"
        rows.append(
            f'<tr class="{judged}"><td>{escape(run.finished_at)}</td>'
            f'<td><a href="{escape(report_url(run.run_id))}">{escape(run.run_id)}</a></td>'
            f"<td>{escape(run.sha[:10])}</td><td>{ok}/{len(run.records)} ok</td>"
            f"<td>{judged}</td><td>{escape(', '.join(hardware) or '-')}</td>"
            f"<td>{f'{sum(hours):.3g}' if hours else '-'}</td></tr>"
        )
    head = _head("finished", "run", "commit", "configs", "judged", "hardware", "GPU-hours")
    return (
        f"<h2>The last {min(len(runs), TABLE_RUNS)} runs</h2><table>{head}{''.join(rows)}</table>"
    )


def _head(*names: str) -> str:
    return "<tr>" + "".join(f"<th>{n}</th>" for n in names) + "</tr>"


def _page(title: str, body: str) -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    ).encode()


def build_series(
    history: HistoryReader,
    series: SeriesRecord,
    writer: SiteWriter,
    report_url: Callable[[str], str],
    page_runs: int = DEFAULT_PAGE_RUNS,
    *,
    unreached: list[str] | None = None,
) -> tuple[int, int]:
    """The pages of one history: (runs, pages). A folder site's report links that find no
    file are added to ``unreached``."""
    name = slug(series)
    resets = history.resets(series.repo, series.branch, series.model)
    records = history.history(series.repo, series.branch, series.model)
    runs = pages = 0
    paged = with_next(pages_of(runs_of(records), page_runs))
    for number, (newest_first, older) in enumerate(paged, start=1):
        runs += len(newest_first)
        if unreached is not None and isinstance(writer, FolderSite):
            links = (report_url(run.run_id) for run in newest_first)
            unreached += [link for link in links if not writer.reaches(link)]
        pages = number
        chronological = newest_first[::-1]
        configs = sorted({r.config for run in newest_first for r in run.records})
        charts = []
        for kpi in _enforced(newest_first):
            chart = f"{name}-{number}-{kpi}.svg"
            writer.write(
                chart, kpi_chart(kpi, chronological, configs, resets, report_url), "image/svg+xml"
            )
            charts.append(
                f"<h3>{escape(LABELS[kpi])}</h3>"
                f'<object data="{chart}" type="image/svg+xml"></object>'
            )
        nav = ['<a href="index.html">all histories</a>']
        if number > 1:
            nav.append(f'<a href="{_page_name(name, number - 1)}">newer runs</a>')
        if older:
            nav.append(f'<a href="{_page_name(name, number + 1)}">older runs</a>')
        table = _runs_table(newest_first, report_url) if number == 1 else ""
        span = f"{chronological[0].finished_at} to {chronological[-1].finished_at}"
        body = (
            f"<nav>{''.join(nav)}</nav><h1>{escape(series.model)} on {escape(series.repo)} "
            f"{escape(series.branch)}</h1><p>{len(newest_first)} runs, {escape(span)}. Each point "
            "links to its run's report; the shaded band is the range each run was allowed.</p>"
            f"{''.join(charts)}{table}"
        )
        writer.write(
            _page_name(name, number),
            _page(f"distkpi {series.model}", body),
            "text/html; charset=utf-8",
        )
    return runs, pages


def _page_name(name: str, number: int) -> str:
    return f"{name}.html" if number == 1 else f"{name}-{number}.html"


def write_index(
    writer: SiteWriter, listed: Sequence[SeriesRecord], unreached: Sequence[str] = ()
) -> None:
    """index.html: every history with its latest verdict, linking its first page, and a
    warning when report links find no file."""
    rows = [
        f'<tr class="{escape(series.state)}"><td>{escape(series.repo)}</td>'
        f"<td>{escape(series.branch)}</td>"
        f'<td><a href="{slug(series)}.html">{escape(series.model)}</a></td>'
        f"<td>{escape(series.state)}: {escape(series.description)}</td>"
        f"<td>{escape(series.finished_at)}</td></tr>"
        for series in listed
    ]
    head = _head("repository", "branch", "model", "latest verdict", "finished")
    warning = (
        f'<p class="error">{len(unreached)} run report link(s) find no file from this folder, '
        f"e.g. {escape(unreached[0])}: the reports are not beside the site.</p>"
        if unreached
        else ""
    )
    body = (
        "<h1>distkpi: KPI history</h1>"
        + warning
        + (f"<table>{head}{''.join(rows)}</table>" if rows else "<p>No history yet.</p>")
    )
    writer.write("index.html", _page("distkpi history", body), "text/html; charset=utf-8")


def build_site(
    history: HistoryReader,
    writer: SiteWriter,
    *,
    repo: str | None = None,
    model: str | None = None,
    branch: str | None = None,
    report_url: str = REPORT_URL,
    page_runs: int = DEFAULT_PAGE_RUNS,
) -> SiteSummary:
    listed = [
        s
        for s in history.series(repo)
        if (model is None or s.model == model)
        and (s.branch == branch if branch is not None else is_published(s.branch))
    ]
    runs = pages = 0
    unreached: list[str] = []
    for series in listed:
        found, written = build_series(
            history,
            series,
            writer,
            lambda r: report_url.format(run_id=r),
            page_runs,
            unreached=unreached,
        )
        runs, pages = runs + found, pages + written
    write_index(writer, listed, unreached)
    return SiteSummary(len(listed), runs, pages, tuple(unreached))
