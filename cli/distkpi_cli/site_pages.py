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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Protocol

from distkpi.domain.records import ResetRecord, SeriesRecord, is_published
from distkpi.services.site import HistoryReader  # the history the site draws
from distkpi_cli import site_view
from distkpi_cli.site_view import (
    LABELS,
    TABLE_RUNS,
    Chart,
    Index,
    Page,
    Run,
    TableRow,
    pages_of,
    runs_of,
    slug,
    with_next,
)

__all__ = ["LABELS", "TABLE_RUNS", "HistoryReader", "Run", "runs_of", "slug"]


DEFAULT_PAGE_RUNS = 500
REPORT_URL = "../reports/{run_id}/index.html"  # the bucket's layout, and out/local's
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
        """``name`` relative to the folder (api/series/... makes its folders)."""
        del content_type
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def reaches(self, link: str) -> bool:
        """Whether a link on its pages finds a file: relative links are resolved from the
        folder; a URL with a scheme (https://...) or an absolute path is taken as given."""
        if "://" in link or link.startswith("/"):
            return True
        return (self.path / link).is_file()


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
    return draw_chart(
        site_view.chart(kpi, "", chronological, configs, resets, report_url=report_url)
    )


def draw_chart(chart: Chart) -> bytes:
    """A chart as SVG: per panel the allowed ranges shaded, the values linked to their
    runs' reports, regressions marked, the change point and resets as vertical lines."""
    plt = _pyplot()
    count = len(chart.panels)
    figure, panels = plt.subplots(count, 1, figsize=(11, 2.3 * count), squeeze=False, sharex=True)
    for axes, panel in zip(panels[:, 0], chart.panels, strict=True):
        xs = [p.x for p in panel.points]
        ys = [p.value for p in panel.points]
        shaded = [p for p in panel.points if p.low is not None and p.high is not None]
        if shaded:  # a bar a run wide each: one run's range shows as well as many
            axes.bar(
                [p.x for p in shaded],
                [(p.high or 0.0) - (p.low or 0.0) for p in shaded],
                width=1.0,
                bottom=[p.low for p in shaded],
                color="tab:green",
                alpha=0.12,
                linewidth=0,
                label="allowed range",
            )
        axes.plot(xs, ys, "-", color="tab:blue", linewidth=0.8)
        dots = axes.scatter(xs, ys, s=14, color="tab:blue", zorder=3)
        dots.set_urls([p.report for p in panel.points])
        bad = [p for p in panel.points if p.regressed]
        if bad:
            marks = axes.scatter(
                [p.x for p in bad],
                [p.value for p in bad],
                s=60,
                marker="v",
                color="tab:red",
                zorder=4,
                label="regressed",
            )
            marks.set_urls([p.report for p in bad])
        if panel.change_point is not None:
            at = panel.change_point.x - 0.5
            axes.axvline(at, color="tab:purple", linestyle="--", linewidth=1)
            axes.annotate(
                panel.change_point.label,
                (at, 1.0),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                color="tab:purple",
                va="top",
            )
        for reset in panel.resets:
            axes.axvline(reset.x - 0.5, color="tab:orange", linestyle=":", linewidth=1.2)
            axes.annotate(
                reset.label,
                (reset.x - 0.5, 0.02),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                color="tab:orange",
            )
        axes.set_title(panel.title, fontsize=9)
        axes.grid(alpha=0.3)
        if shaded or bad:
            axes.legend(fontsize=7, loc="best")
    panels[-1, 0].set_xticks([x for x, _ in chart.ticks], [s for _, s in chart.ticks], fontsize=7)
    panels[-1, 0].set_xlabel("commit (oldest to newest)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg")
    plt.close(figure)
    return buffer.getvalue()


def _runs_table(rows: Sequence[TableRow]) -> str:
    cells = []
    for row in rows:
        hours = f"{row.gpu_hours:.3g}" if row.gpu_hours is not None else "-"
        cells.append(
            f'<tr class="{row.judged}"><td>{escape(row.finished_at)}</td>'
            f'<td><a href="{escape(row.report)}">{escape(row.run_id)}</a></td>'
            f"<td>{escape(row.sha)}</td><td>{row.ok}/{row.configs} ok</td>"
            f"<td>{row.judged}</td><td>{escape(', '.join(row.hardware) or '-')}</td>"
            f"<td>{hours}</td></tr>"
        )
    head = _head("finished", "run", "commit", "configs", "judged", "hardware", "GPU-hours")
    return f"<h2>The last {len(rows)} runs</h2><table>{head}{''.join(cells)}</table>"


def _head(*names: str) -> str:
    return "<tr>" + "".join(f"<th>{n}</th>" for n in names) + "</tr>"


def _page(title: str, body: str) -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    ).encode()


def render_page(page: Page) -> bytes:
    """A history's page as HTML (its charts are files of their own, `draw_chart`)."""
    charts = "".join(
        f'<h3>{escape(c.label)}</h3><object data="{c.file}" type="image/svg+xml"></object>'
        for c in page.charts
    )
    nav = "".join(f'<a href="{link}">{text}</a>' for link, text in page.nav)
    table = _runs_table(page.table) if page.table is not None else ""
    span = f"{page.first} to {page.last}"
    body = (
        f"<nav>{nav}</nav><h1>{escape(page.model)} on {escape(page.repo)} "
        f"{escape(page.branch)}</h1><p>{page.runs} runs, {escape(span)}. Each point "
        "links to its run's report; the shaded band is the range each run was allowed.</p>"
        f"{charts}{table}"
    )
    return _page(f"distkpi {page.model}", body)


def render_index(index: Index) -> bytes:
    """index.html: every history with its latest verdict, linking its first page, and a
    warning when report links find no file."""
    rows = [
        f'<tr class="{escape(row.state)}"><td>{escape(row.repo)}</td>'
        f"<td>{escape(row.branch)}</td>"
        f'<td><a href="{row.page}">{escape(row.model)}</a></td>'
        f"<td>{escape(row.state)}: {escape(row.description)}</td>"
        f"<td>{escape(row.finished_at)}</td></tr>"
        for row in index.rows
    ]
    head = _head("repository", "branch", "model", "latest verdict", "finished")
    unreached = index.unreached
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
    return _page("distkpi history", body)


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
        page = site_view.page(series, number, newest_first, older, resets, report_url=report_url)
        for chart in page.charts:
            writer.write(chart.file, draw_chart(chart), "image/svg+xml")
        writer.write(page.file, render_page(page), "text/html; charset=utf-8")
    return runs, pages


def write_index(
    writer: SiteWriter, listed: Sequence[SeriesRecord], unreached: Sequence[str] = ()
) -> None:
    """index.html: every history with its latest verdict, linking its first page, and a
    warning when report links find no file."""
    page = render_index(site_view.index(listed, unreached))
    writer.write("index.html", page, "text/html; charset=utf-8")


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
