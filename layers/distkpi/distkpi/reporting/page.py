"""A run's report: one HTML page a person can read, with its charts beside it and inside it."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.statistics import Judgement, KpiVerdict
from distkpi.domain.judging.table import rows
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, RunKpis
from distkpi.domain.records import RunRecord, is_published
from distkpi.reporting.charts import speedup_chart, throughput_history_chart

# the history application (reporting/app/) from reports/<run_id>/index.html: the site's root
APP = "../../"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child, .judged td:nth-child(2), .judged td:last-child { text-align: left; }
.success, .pass { background: #e6f4ea; } .failure, .regressed { background: #fce8e6; }
.error { background: #fef7e0; } .improved { background: #e8f0fe; }
.state { display: inline-block; padding: 4px 10px; border-radius: 4px; font-weight: bold; }
"""


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else escape(str(value))


def _kpi_table(run: RunKpis) -> str:
    head = "".join(f"<th>{escape(c.name)}</th>" for c in run.configs)
    body = "".join(
        f"<tr><td>{escape(row.label)}</td>"
        + "".join(f"<td>{escape(row.cell(c))}</td>" for c in run.configs)
        + "</tr>"
        for row in rows(run)
    )
    return f"<table><tr><th>KPI</th>{head}</tr>{body}</table>"


def _judgement_table(judgements: Sequence[Judgement]) -> str:
    if not judgements:
        return ""
    rows = "".join(
        f'<tr class="{j.verdict.value}"><td>{escape(j.config)}</td><td>{escape(j.kpi)}</td>'
        f"<td>{_cell(j.value)}</td><td>{_cell(j.baseline)}</td>"
        f"<td>{_cell(j.low)} … {_cell(j.high)}</td>"
        f"<td>{'-' if j.delta is None else f'{j.delta:+.1%}'}</td>"
        f"<td>{escape(j.verdict.value)}</td><td>{escape(j.why)}</td></tr>"
        for j in judgements
        if j.verdict is not KpiVerdict.NO_BASELINE or j.value is not None
    )
    return (
        "<table><tr><th>config</th><th>KPI</th><th>value</th><th>baseline</th>"
        f"<th>allowed range</th><th>delta</th><th>verdict</th><th>why</th></tr>{rows}</table>"
    )


def _names(configs: Sequence[ConfigKpis]) -> str:
    return ", ".join(c.name for c in configs)


def history_note(record: RunRecord, judgements: Sequence[Judgement]) -> str:
    """What this run did to the history, in words: only its ok configs' KPIs are baseline
    values for the runs after it; a bisection step joins no history at all."""
    configs = record.evaluation.kpis.configs if record.evaluation else ()
    if record.bisection is not None:
        return "A bisection step: it joins no history."
    ok = [c for c in configs if c.status is ConfigStatus.OK]
    failed = [c for c in configs if c.status is not ConfigStatus.OK]
    branch = record.history_branch
    if not ok:
        return (
            f"No config finished: this run is recorded in {branch}'s history but adds no "
            "baseline value to it; the next run is judged as if this one had not run."
        )
    judged = any(j.baseline is not None for j in judgements)
    start = "The" if judged else "No baseline yet: the"
    joins = "as baseline values" if is_published(branch) else "(a pull request's: no baseline)"
    note = f"{start} KPIs of {_names(ok)} join {branch}'s history {joins}"
    if failed:
        note += f"; {_names(failed)} failed and add{'s' if len(failed) == 1 else ''} none"
    return note + "."


def _log_link(run_id: str, path: str) -> str:
    """A link from reports/<run_id>/index.html to the run folder's file, the bucket's layout
    and out/local's; its text is the key, where the file is wherever the report is read."""
    key = f"runs/{run_id}/{path}"
    return f'<a href="../../{escape(key)}">{escape(key)}</a>'


def _failed(
    run_id: str, configs: Sequence[ConfigKpis], logs: Mapping[str, Sequence[str]] | None
) -> str:
    """Each failed config: its status, why, and its logs (``logs`` None: not looked for)."""
    items = []
    for c in configs:
        if c.status is ConfigStatus.OK:
            continue
        why = "; ".join(c.problems) or "no cause recorded"
        item = f"<li><b>{escape(c.name)}</b> {escape(c.status.value)}: {escape(why)}"
        if logs is not None:
            found = logs.get(c.name, ())
            links = ", ".join(_log_link(run_id, path) for path in found) or "none uploaded"
            item += f"<br>logs: {links}"
        items.append(item + "</li>")
    return f"<h2>Failed configs</h2><ul>{''.join(items)}</ul>" if items else ""


def _problems(configs: Sequence[ConfigKpis]) -> str:
    items = "".join(
        f"<li>{escape(c.name)}: {escape(p)}</li>"
        for c in configs
        if c.status is ConfigStatus.OK
        for p in c.problems
    )
    return f"<h2>Problems</h2><ul>{items}</ul>" if items else ""


def baseline_run(history: Sequence[HistoryRow], run_id: str) -> str | None:
    """The newest run of the history a run was judged against (not the run itself)."""
    earlier = [row for row in history if row.run_id != run_id]
    return max(earlier, key=lambda row: row.finished_at).run_id if earlier else None


def app_links(record: RunRecord, history: Sequence[HistoryRow]) -> str:
    """Links into the history application: this run's point on its model's charts, and the
    comparison with the newest run of the history it was judged against."""
    if record.bisection is not None:
        return ""
    where = {"repo": record.trigger.repo, "branch": record.history_branch, "model": record.model}
    point = f"{APP}model.html?{urlencode({**where, 'run': record.run_id})}"
    links = [f'<a class="app-point" href="{escape(point)}">this run on the history\'s charts</a>']
    baseline = baseline_run(history, record.run_id)
    if baseline is not None:
        compare = f"{APP}compare.html?{urlencode({'a': baseline, 'b': record.run_id})}"
        links.append(
            f'<a class="app-compare" href="{escape(compare)}">compare with {escape(baseline)}, '
            "the newest run of its baseline</a>"
        )
    return f"<p>In the history: {' &middot; '.join(links)}</p>"


def _img(name: str, png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode()
    return f'<p><img src="data:image/png;base64,{data}" alt="{escape(alt)}" title="{name}"></p>'


def build_report(
    record: RunRecord,
    history: Sequence[HistoryRow],
    logs: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, bytes]:
    """index.html (charts inlined, so a presigned link shows them) and the charts as PNGs
    (each only when it has something to draw), of a finished run judged against
    ``history``; ``logs``: each failed config's log files, as paths in the run folder."""
    evaluation = record.evaluation
    if evaluation is None:
        raise ValueError(f"run {record.run_id} has not finished")
    run, judgements = evaluation.kpis, evaluation.judgements
    state = evaluation.verdict.state.value
    trigger = record.trigger
    base = min(run.configs, key=lambda c: c.gpus).name if run.configs else None
    largest = max(run.configs, key=lambda c: c.gpus).name if run.configs else None
    drawn = {
        "speedup.png": speedup_chart(run),
        "throughput_history.png": throughput_history_chart(
            run,
            history,
            [c for c in dict.fromkeys([base, largest]) if c],
            judgements,
            repeats=record.verdict_settings.count_repeats,
        ),
    }
    charts = {name: png for name, png in drawn.items() if png is not None}

    title = f"distkpi {escape(run.model)} {escape(run.run_id)}"
    cost = f" &middot; {run.gpu_hours:.3g} GPU-hours" if run.gpu_hours is not None else ""
    description = escape(evaluation.description)
    speedup = (
        _img("speedup.png", charts["speedup.png"], "speedup vs GPUs")
        if "speedup.png" in charts
        else "<p>No config reported a speedup: nothing to draw.</p>"
    )
    history_img = (
        _img("throughput_history.png", charts["throughput_history.png"], "history")
        if "throughput_history.png" in charts
        else "<p>No throughput, in this run or its history: nothing to draw.</p>"
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{STYLE}</style></head><body>
<h1>distkpi/{escape(run.model)} on {escape(trigger.repo)}@{escape(trigger.sha[:10])}</h1>
<p><span class="state {escape(state)}">{escape(state)}</span> {description}</p>
<p>run {escape(run.run_id)} &middot; {escape(trigger.event)} on {escape(trigger.branch)}
&middot; judged against {escape(trigger.base_branch)}, on the same hardware &middot;
finished {escape(record.finished_at or "")}{cost}</p>
{app_links(record, history)}
{_failed(run.run_id, run.configs, logs)}
<h2>KPIs</h2>{_kpi_table(run)}
<h2>Against the baseline</h2><p>{escape(history_note(record, judgements))}</p>
{_judgement_table(judgements)}
<h2>Scaling</h2>{speedup}
<h2>History</h2>{history_img}
{_problems(run.configs)}
</body></html>
"""
    return {"index.html": page.encode(), **charts}
